// The optimizer-step loops (kernels/cpu/step_math.h) give the bits of their
// formulas written out element by element, on whichever vector path this CPU
// takes (run with ONEDNN_MAX_CPU_ISA=AVX2 for the 256-bit one): every
// combination of options, lengths around the vector widths, values from tiny
// to huge. The formulas themselves are checked against PyTorch in
// tests/executor/optim_test.cc.
#include "kernels/cpu/step_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ir/dtype.h"
#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/float_convert.h"

namespace amptrain::kernels::cpu {
namespace {

const int64_t kLengths[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 1000, 4099};

std::string Path() {
  return Cpu().vector512() ? "512-bit" : Cpu().vector256() ? "256-bit" : "scalar";
}

// Values spread over many binades, with both signs.
std::vector<float> Values(int64_t n, uint32_t seed, float lo_exp = -30, float hi_exp = 10) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> e(lo_exp, hi_exp), u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng) * std::exp2(e(rng));
  return v;
}

void ExpectBits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(ir::FloatBits(got[i]), ir::FloatBits(want[i]))
        << what << " element " << i << " of " << got.size() << ": " << got[i] << " vs " << want[i] << " (" << Path()
        << " path)";
}

// PyTorch's default Adam at a step's scalars; no decay, scaling or clipping.
AdamScalars Adam() {
  AdamScalars s{};
  s.beta1 = 0.9f;
  s.beta2 = 0.999f;
  s.omb1 = static_cast<float>(1.0 - 0.9);
  s.omb2 = static_cast<float>(1.0 - 0.999);
  s.eps = 1e-8f;
  s.decay = 1.0f;
  s.inv_scale = 1.0f;
  s.clip = 1.0f;
  s.neg_step = -1e-3f / 0.271f;
  s.bc2_sqrt = 0.0447f;
  return s;
}

TEST(StepMath, AdamGivesTheBitsOfTheFormula) {
  for (int64_t n : kLengths) {
    for (int variant = 0; variant < 8; ++variant) {
      AdamScalars s = Adam();
      s.l2 = (variant & 1) ? 0.01f : 0.0f;
      s.apply_decay = (variant & 2) != 0;
      s.decay = 0.999f;
      s.inv_scale = (variant & 4) ? 1.0f / 65536.0f : 1.0f;
      s.clip = variant == 7 ? 0.37f : 1.0f;
      const std::vector<float> p0 = Values(n, 1), g = Values(n, 2, -40, 20), m0 = Values(n, 3), v0 = Values(n, 4);
      std::vector<float> v_init(v0.size());
      for (size_t i = 0; i < v0.size(); ++i) v_init[i] = v0[i] * v0[i];  // second moments are >= 0
      std::vector<float> p = p0, m = m0, v = v_init;
      AdamSpan(s, p.data(), g.data(), m.data(), v.data(), n);
      std::vector<float> wp = p0, wm = m0, wv = v_init;
      for (size_t j = 0; j < wp.size(); ++j) {
        float pj = wp[j];
        if (s.apply_decay) pj = pj * s.decay;
        float gj = g[j];
        if (s.inv_scale != 1.0f) gj = gj * s.inv_scale;
        if (s.clip != 1.0f) gj = gj * s.clip;
        if (s.l2 != 0.0f) gj = gj + s.l2 * pj;
        wm[j] = wm[j] * s.beta1 + s.omb1 * gj;
        wv[j] = wv[j] * s.beta2 + (s.omb2 * gj) * gj;
        const float denom = std::sqrt(wv[j]) / s.bc2_sqrt + s.eps;
        wp[j] = pj + (s.neg_step * wm[j]) / denom;
      }
      const std::string what = "Adam variant " + std::to_string(variant);
      ExpectBits(p, wp, what + " parameter");
      ExpectBits(m, wm, what + " exp_avg");
      ExpectBits(v, wv, what + " exp_avg_sq");
    }
  }
}

TEST(StepMath, SgdGivesTheBitsOfTheFormula) {
  for (int64_t n : kLengths) {
    for (int variant = 0; variant < 16; ++variant) {
      SgdScalars s{};
      s.momentum = (variant & 1) ? 0.9f : 0.0f;
      s.nesterov = (variant & 3) == 3;
      s.first = (variant & 4) != 0;
      s.weight_decay = (variant & 8) ? 0.01f : 0.0f;
      s.inv_scale = variant % 3 == 0 ? 1.0f / 1024.0f : 1.0f;
      s.clip = variant % 5 == 0 ? 0.61f : 1.0f;
      s.neg_lr = -0.05f;
      const std::vector<float> p0 = Values(n, 5), g = Values(n, 6), b0 = Values(n, 7);
      std::vector<float> p = p0, buf = b0;
      SgdSpan(s, p.data(), g.data(), buf.data(), n);
      std::vector<float> wp = p0, wb = b0;
      for (size_t j = 0; j < wp.size(); ++j) {
        float d = g[j];
        if (s.inv_scale != 1.0f) d = d * s.inv_scale;
        if (s.clip != 1.0f) d = d * s.clip;
        if (s.weight_decay != 0.0f) d = d + s.weight_decay * wp[j];
        if (s.momentum != 0.0f) {
          wb[j] = s.first ? d : wb[j] * s.momentum + d;
          d = s.nesterov ? d + s.momentum * wb[j] : wb[j];
        }
        wp[j] = wp[j] + s.neg_lr * d;
      }
      const std::string what = "SGD variant " + std::to_string(variant);
      ExpectBits(p, wp, what + " parameter");
      ExpectBits(buf, wb, what + " momentum buffer");
    }
  }
}

TEST(StepMath, GradStatsSumsInLaneOrder) {
  for (int64_t n : kLengths) {
    for (float inv : {1.0f, 1.0f / 65536.0f}) {
      const std::vector<float> g = Values(n, 8, -20, 20);
      double lanes[16] = {};
      for (size_t j = 0; j < g.size(); ++j) {
        const float r = inv == 1.0f ? g[j] : g[j] * inv;
        lanes[j % 16] += static_cast<double>(r) * static_cast<double>(r);
      }
      double want = 0.0;
      for (double lane : lanes) want += lane;
      const GradStats got = GradStatsSpan(g.data(), inv, n);
      EXPECT_FALSE(got.nonfinite) << n;
      EXPECT_EQ(got.sum_squares, want) << "length " << n << ", " << Path() << " path";
    }
  }
}

TEST(StepMath, GradStatsFindsEveryNonFinitePosition) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {1, 16, 17, 40}) {
    for (int64_t at = 0; at < n; ++at) {
      for (float bad : {inf, -inf, nan}) {
        std::vector<float> g = Values(n, 9);
        g[static_cast<size_t>(at)] = bad;
        EXPECT_TRUE(GradStatsSpan(g.data(), 1.0f, n).nonfinite) << bad << " at " << at << " of " << n;
      }
      // Finite, but infinite once unscaled by an inverse scale above 1.
      std::vector<float> g = Values(n, 10, -5, 0);
      g[static_cast<size_t>(at)] = std::numeric_limits<float>::max();
      EXPECT_FALSE(GradStatsSpan(g.data(), 1.0f, n).nonfinite);
      EXPECT_TRUE(GradStatsSpan(g.data(), 2.0f, n).nonfinite) << "overflow on unscaling at " << at << " of " << n;
    }
  }
}

// `values` rounded to a 2-byte dtype, as its raw 16-bit words.
std::vector<uint16_t> Narrowed(ir::DType t, const std::vector<float>& values) {
  std::vector<uint16_t> out(values.size());
  NarrowFromFloat(t, values.data(), out.data(), static_cast<int64_t>(values.size()), 1);
  return out;
}

std::vector<float> Widened(ir::DType t, const std::vector<uint16_t>& words) {
  std::vector<float> out(words.size());
  WidenToFloat(t, words.data(), out.data(), static_cast<int64_t>(words.size()), 1);
  return out;
}

// O1/O2's fused step: 2-byte gradients widened and the low copy rounded in
// registers give the bits of widening the gradients first, the fp32 loop,
// then rounding the parameters; the statistics of 2-byte gradients are those
// of their widened values.
TEST(StepMath, TwoByteGradientsAndLowCopiesGiveTheBitsOfConvertingAround) {
  for (ir::DType t : {ir::DType::kBFloat16, ir::DType::kFloat16}) {
    for (int64_t n : kLengths) {
      AdamScalars s = Adam();
      s.inv_scale = t == ir::DType::kFloat16 ? 1.0f / 1024.0f : 1.0f;
      const std::vector<uint16_t> g = Narrowed(t, Values(n, 12, -12, 4));
      const std::vector<float> p0 = Values(n, 13, -10, 2), m0 = Values(n, 14, -20, 0);
      std::vector<float> v0 = Values(n, 15, -20, 0);
      for (float& x : v0) x = x * x;
      for (ir::DType low_t : {ir::DType::kUndefined, ir::DType::kBFloat16, ir::DType::kFloat16}) {
        std::vector<float> p = p0, m = m0, v = v0;
        std::vector<uint16_t> low(static_cast<size_t>(n), 0xdead);
        AdamSpan(s, p.data(), g.data(), t, m.data(), v.data(), low_t == ir::DType::kUndefined ? nullptr : low.data(),
                 low_t, n);
        std::vector<float> wp = p0, wm = m0, wv = v0;
        AdamSpan(s, wp.data(), Widened(t, g).data(), wm.data(), wv.data(), n);
        const std::string what =
            std::string(ir::DTypeName(t)) + " gradients, low copy " + std::string(ir::DTypeName(low_t));
        ExpectBits(p, wp, what + ": parameter");
        ExpectBits(m, wm, what + ": exp_avg");
        ExpectBits(v, wv, what + ": exp_avg_sq");
        if (low_t != ir::DType::kUndefined) {
          EXPECT_EQ(low, Narrowed(low_t, wp)) << what << ", length " << n;
        }
      }
      for (float inv : {1.0f, 1.0f / 65536.0f}) {
        const GradStats got = GradStatsSpan(g.data(), t, inv, n);
        const GradStats want = GradStatsSpan(Widened(t, g).data(), inv, n);
        EXPECT_EQ(got.nonfinite, want.nonfinite);
        EXPECT_EQ(got.sum_squares, want.sum_squares) << ir::DTypeName(t) << ", length " << n << ", " << Path();
      }
      if (n > 0) {  // a 2-byte inf at each end
        std::vector<uint16_t> bad = g;
        bad.front() = Narrowed(t, {std::numeric_limits<float>::infinity()})[0];
        EXPECT_TRUE(GradStatsSpan(bad.data(), t, 1.0f, n).nonfinite);
        bad = g;
        bad.back() = Narrowed(t, {std::numeric_limits<float>::quiet_NaN()})[0];
        EXPECT_TRUE(GradStatsSpan(bad.data(), t, 1.0f, n).nonfinite);
      }
    }
  }
}

}  // namespace
}  // namespace amptrain::kernels::cpu
