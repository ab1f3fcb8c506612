// The bulk fp32 <-> fp16/bf16 conversions (kernels/cpu/float_convert.h) give
// ir/dtype.h's bits for every value: every 2-byte pattern widened, and
// narrowing of every rounding boundary, tie, subnormal, inf and NaN, at
// lengths that exercise the vector loops and their scalar tails. Rounding in
// fp32 (RoundToFloat) gives the bits of narrowing then widening.
#include "kernels/cpu/float_convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace amptrain::kernels::cpu {
namespace {

using ir::DType;

TEST(FloatConvert, WidensEveryPattern) {
  std::vector<uint16_t> in(65536 + 3);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint16_t>(i);
  std::vector<float> out(in.size());
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    WidenToFloat(t, in.data(), out.data(), static_cast<int64_t>(in.size()), 2);
    for (size_t i = 0; i < in.size(); ++i) {
      const float want = t == DType::kBFloat16 ? ir::BFloat16ToFloat(in[i]) : ir::HalfToFloat(in[i]);
      ASSERT_EQ(ir::FloatBits(out[i]), ir::FloatBits(want)) << ir::DTypeName(t) << " pattern " << i;
    }
  }
}

TEST(FloatConvert, NarrowsLikeTheScalarRounding) {
  std::vector<float> in;
  for (uint32_t hi = 0; hi < 65536; hi += 7) {  // around every 7th bf16 value: ties, +-1 ulp, NaN payloads
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) in.push_back(ir::BitsFloat((hi << 16) | lo));
  }
  for (float f : {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::signaling_NaN(),
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(), 65504.0f, 65520.0f,
                  5.96e-8f, 2.98e-8f})
    in.push_back(f);
  std::mt19937 rng(5);
  for (int i = 0; i < 100000; ++i) in.push_back(ir::BitsFloat(rng()));
  for (size_t n : {in.size(), size_t{7}, size_t{9}, size_t{17}}) {
    std::vector<uint16_t> out(n);
    for (DType t : {DType::kBFloat16, DType::kFloat16}) {
      NarrowFromFloat(t, in.data(), out.data(), static_cast<int64_t>(n), 2);
      for (size_t i = 0; i < n; ++i) {
        const uint16_t want = t == DType::kBFloat16 ? ir::FloatToBFloat16(in[i]) : ir::FloatToHalf(in[i]);
        if (t == DType::kFloat16 && (want & 0x7c00u) == 0x7c00u && (want & 0x3ffu) != 0) {
          EXPECT_EQ(out[i] & 0x7c00u, 0x7c00u) << "NaN stays NaN";  // F16C may quiet a NaN's payload
          EXPECT_NE(out[i] & 0x3ffu, 0u);
          continue;
        }
        ASSERT_EQ(out[i], want) << ir::DTypeName(t) << " of bits " << std::hex << ir::FloatBits(in[i]);
      }
    }
  }
}

TEST(FloatConvert, RoundingInFp32IsNarrowingThenWidening) {
  std::vector<float> in;
  for (uint32_t hi = 0; hi < 65536; hi += 5)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1000u}) in.push_back(ir::BitsFloat((hi << 16) | lo));
  for (float f : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::signaling_NaN(), std::numeric_limits<float>::max(), 65504.0f, 65520.0f,
                  -65520.0f, 5.96e-8f, 2.98e-8f, -0.0f})
    in.push_back(f);
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) in.push_back(ir::BitsFloat(rng()));
  for (size_t n : {in.size(), size_t{5}, size_t{8}, size_t{23}, size_t{1000}}) {
    for (DType t : {DType::kBFloat16, DType::kFloat16}) {
      std::vector<uint16_t> low(n);
      std::vector<float> want(n), got(n), inplace(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
      NarrowFromFloat(t, in.data(), low.data(), static_cast<int64_t>(n), 2);
      WidenToFloat(t, low.data(), want.data(), static_cast<int64_t>(n), 2);
      RoundToFloat(t, in.data(), got.data(), static_cast<int64_t>(n), 2);
      RoundToFloat(t, inplace.data(), inplace.data(), static_cast<int64_t>(n), 2);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(ir::FloatBits(got[i]), ir::FloatBits(want[i]))
            << ir::DTypeName(t) << " of bits " << std::hex << ir::FloatBits(in[i]) << " at " << std::dec << i;
        ASSERT_EQ(ir::FloatBits(inplace[i]), ir::FloatBits(want[i])) << "in place, " << ir::DTypeName(t) << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace amptrain::kernels::cpu
