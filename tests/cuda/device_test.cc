// The CUDA Device: a clean error where there is no GPU (this test runs on
// every machine), and where there is one: allocation, copies both ways and
// on the device, memory counters, a bad index and out of memory.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/device.h"

namespace amptrain::kernels {
namespace {

TEST(CudaDevice, OpenReportsOneClearLineOrOpens) {
  const std::string reason = cuda::NoDeviceReason();
  StatusOr<std::shared_ptr<Device>> dev = OpenDevice(DeviceSpec{DeviceKind::kCuda, 0});
  if (!reason.empty()) {
    ASSERT_FALSE(dev.ok());
    const std::string msg = dev.status().message();
    EXPECT_EQ(msg.rfind("no CUDA device: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg, reason);
    return;
  }
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ((*dev)->kind(), DeviceKind::kCuda);
  EXPECT_EQ((*dev)->Describe().rfind("cuda:0 (", 0), 0u) << (*dev)->Describe();
}

TEST(CudaDevice, BadIndexNamesTheCount) {
  StatusOr<std::shared_ptr<Device>> dev = OpenDevice(DeviceSpec{DeviceKind::kCuda, 99});
  ASSERT_FALSE(dev.ok());
  const std::string msg = dev.status().message();
  if (!cuda::NoDeviceReason().empty()) {
    EXPECT_EQ(msg.rfind("no CUDA device: ", 0), 0u) << msg;
  } else {
    EXPECT_NE(msg.find("cuda:99 does not exist: this machine has "), std::string::npos) << msg;
  }
}

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::shared_ptr<Device>> dev = OpenDevice(DeviceSpec{DeviceKind::kCuda, 0});
    if (!dev.ok()) GTEST_SKIP() << dev.status().message();
    dev_ = *dev;
  }
  std::shared_ptr<Device> dev_;
};

TEST_F(CudaDeviceTest, RoundTripAndCounters) {
  std::vector<float> host(100000);
  std::iota(host.begin(), host.end(), 0.5f);
  const size_t bytes = host.size() * sizeof(float);
  const size_t before = dev_->memory_in_use();
  auto run = dev_->NewRunContext(1);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_NE(run->stream, nullptr);
  std::vector<float> back(host.size(), 0.0f);
  {
    auto a = dev_->Allocate(bytes), b = dev_->Allocate(bytes);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a->get()) % 256, 0u);
    EXPECT_GE(dev_->memory_in_use(), before + 2 * bytes);
    EXPECT_GE(dev_->peak_memory(), dev_->memory_in_use());
    ASSERT_TRUE(dev_->CopyToDevice(a->get(), host.data(), bytes, *run).ok());
    ASSERT_TRUE(dev_->CopyOnDevice(b->get(), a->get(), bytes, *run).ok());
    ASSERT_TRUE(dev_->CopyToHost(back.data(), b->get(), bytes, *run).ok());
    ASSERT_TRUE(dev_->Synchronize(*run).ok());
  }
  EXPECT_EQ(std::memcmp(back.data(), host.data(), bytes), 0);
  EXPECT_EQ(dev_->memory_in_use(), before);
}

TEST_F(CudaDeviceTest, OutOfMemoryNamesTheBytes) {
  const size_t huge = size_t{1} << 50;  // 1 PiB
  auto buf = dev_->Allocate(huge);
  ASSERT_FALSE(buf.ok());
  EXPECT_NE(buf.status().message().find("out of memory allocating 1125899906842624 bytes on cuda:0"),
            std::string::npos)
      << buf.status().message();
  // The device stays usable.
  auto small = dev_->Allocate(1024);
  EXPECT_TRUE(small.ok()) << small.status().ToString();
}

}  // namespace
}  // namespace amptrain::kernels
