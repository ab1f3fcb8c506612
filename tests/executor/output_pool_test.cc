// The session's output-buffer pool (executor/output_pool.h): a dropped
// tensor's buffer serves the next tensor of its size, a held one never does,
// and tensors may outlive the pool.
#include "executor/output_pool.h"

#include <gtest/gtest.h>

#include <memory>

namespace amptrain::executor {
namespace {

using ir::DType;

TEST(OutputPool, ReusesADroppedBufferOfTheSameSize) {
  OutputPool pool;
  auto a = pool.Take(DType::kFloat32, {4, 100});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->dims(), (std::vector<int64_t>{4, 100}));
  EXPECT_EQ(a->nbytes(), 1600u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->raw()) % 64, 0u);
  const void* first = a->raw();
  *a = ir::Tensor();  // dropped: back to the pool
  EXPECT_EQ(pool.idle_bytes(), 1600u);
  // Same byte size, another dtype and shape: the same buffer.
  auto b = pool.Take(DType::kFloat16, {8, 100});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->raw(), first);
  EXPECT_EQ(pool.idle_bytes(), 0u);
  // While b is held, a tensor of its size gets a buffer of its own.
  auto c = pool.Take(DType::kFloat32, {400});
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->raw(), b->raw());
  // A copy keeps the buffer out of the pool until the last copy goes.
  ir::Tensor copy = *c;
  *c = ir::Tensor();
  EXPECT_EQ(pool.idle_bytes(), 0u);
  copy = ir::Tensor();
  EXPECT_EQ(pool.idle_bytes(), 1600u);
  pool.Release();
  EXPECT_EQ(pool.idle_bytes(), 0u);
}

TEST(OutputPool, TensorsOutliveThePool) {
  ir::Tensor kept;
  {
    OutputPool pool;
    auto t = pool.Take(DType::kInt64, {3});
    ASSERT_TRUE(t.ok());
    t->data<int64_t>()[2] = 42;
    kept = *t;
  }
  EXPECT_EQ(kept.data<int64_t>()[2], 42);  // still valid; freed when dropped (ASan checks)
}

TEST(OutputPool, RejectsBadShapes) {
  OutputPool pool;
  EXPECT_FALSE(pool.Take(DType::kFloat32, {-1, 4}).ok());
  EXPECT_FALSE(pool.Take(DType::kUndefined, {4}).ok());
}

}  // namespace
}  // namespace amptrain::executor
