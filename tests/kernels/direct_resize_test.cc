// The direct Resize and ResizeGrad kernels (kernels/cpu/direct_resize.cc)
// against the reference (kernels/cpu/pad_resize.cc) in fp32, bf16 and fp16:
// the same bits, forward and gradient, over the modes, coordinate
// transforms, tf_crop_and_resize's extrapolation, scales or
// sizes, an image or a signal, one axis or two; and what the direct kernel
// declines (a resized channel axis, run-time scales) still runs.
#include <string>
#include <tuple>

#include "tests/kernels/direct_test_util.h"
#include "tests/kernels/grad_test_util.h"
#include "tests/kernels/kernel_paths.h"

namespace amptrain::kernels::testing {
namespace {

using gradtest::Options;
using gradtest::RunKernel;
using ir::Attributes;
using ir::OpKind;
using ir::Tensor;
using I = std::vector<int64_t>;

class DirectResize : public ::testing::TestWithParam<KernelPath> {};
INSTANTIATE_DIRECT_PATHS(DirectResize);

Tensor Floats(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return ir::Tensor::Floats(std::move(v), {n});
}

struct Case {
  std::string name;
  I x;
  std::vector<std::pair<std::string, ir::AttrValue>> attrs;
  std::vector<float> scales;  // empty: sizes
  I sizes;
  std::vector<float> roi;
};

std::vector<Case> Cases() {
  using S = std::string;
  const auto linear = std::make_pair(S("mode"), ir::AttrValue(S("linear")));
  const auto cubic = std::make_pair(S("mode"), ir::AttrValue(S("cubic")));
  auto coord = [](const char* c) { return std::make_pair(S("coordinate_transformation_mode"), ir::AttrValue(S(c))); };
  return {
      {"nearest 2x (Upsample)", {2, 3, 5, 6}, {coord("asymmetric")}, {1, 1, 2, 2}, {}, {}},
      {"nearest round_prefer_ceil half_pixel, sizes", {1, 2, 4, 5}, {std::make_pair(S("nearest_mode"),
       ir::AttrValue(S("round_prefer_ceil"))), coord("half_pixel")}, {}, {1, 2, 9, 7}, {}},
      {"bilinear 2x pytorch_half_pixel", {2, 3, 5, 6}, {linear, coord("pytorch_half_pixel")}, {1, 1, 2, 2}, {}, {}},
      {"bilinear align_corners, sizes", {1, 4, 7, 5}, {linear, coord("align_corners")}, {}, {1, 4, 13, 9}, {}},
      {"bilinear down 0.6", {1, 2, 10, 12}, {linear}, {1, 1, 0.6f, 0.6f}, {}, {}},
      {"antialiased bicubic down 0.4, 0.75", {1, 2, 11, 12}, {cubic, std::make_pair(S("antialias"), ir::AttrValue(int64_t{1}))},
       {1, 1, 0.4f, 0.75f}, {}, {}},
      {"bicubic exclude_outside", {1, 2, 6, 7}, {cubic, std::make_pair(S("exclude_outside"), ir::AttrValue(int64_t{1}))},
       {1, 1, 1.7f, 2.3f}, {}, {}},
      {"tf_crop_and_resize extrapolation", {1, 2, 6, 6}, {linear, coord("tf_crop_and_resize"),
       std::make_pair(S("extrapolation_value"), ir::AttrValue(0.5f))}, {}, {1, 2, 5, 7}, {0, 0, -0.2f, 0.1f, 1, 1, 0.8f, 1.3f}},
      {"width only", {2, 3, 4, 6}, {linear}, {1, 1, 1, 1.5f}, {}, {}},
      {"height only", {2, 3, 6, 4}, {linear}, {1, 1, 0.5f, 1}, {}, {}},
      {"signal 4x linear", {2, 3, 17}, {linear, coord("half_pixel")}, {1, 1, 4}, {}, {}},
      {"volume, last two axes", {1, 2, 3, 4, 5}, {linear}, {1, 1, 1, 2, 2}, {}, {}},
  };
}

std::vector<Tensor> Inputs(const Case& c, const Tensor& x) {
  return {x, c.roi.empty() ? Tensor() : Floats(c.roi), c.scales.empty() ? Tensor() : Floats(c.scales),
          c.sizes.empty() ? Tensor() : ir::Tensor::Int64s(c.sizes, {static_cast<int64_t>(c.sizes.size())})};
}

Attributes AttrsOf(const Case& c) {
  Attributes a;
  for (const auto& [k, v] : c.attrs) a.Set(k, v);
  return a;
}

TEST_P(DirectResize, SameBitsAsReference) {
  const DType t = GetParam().dtype;
  for (const Case& c : Cases()) {
    const Attributes a = AttrsOf(c);
    const std::vector<Tensor> in = Inputs(c, Values(c.x, 7, t));
    // roi, scales and sizes are constants, as the exporters write them.
    auto got = RunKernel(OpKind::kResize, a, in, Options{.impl = "direct", .constant_inputs = 0b1110});
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
    auto want = RunKernel(OpKind::kResize, a, in, Options{.impl = "reference"});
    ASSERT_TRUE(want.ok()) << c.name << ": " << want.status().ToString();
    EXPECT_TRUE(SameBitsOrNaNs((*got)[0], (*want)[0])) << c.name << " " << ir::DTypeName(t);
    // ResizeGrad(dY, shape of X, roi, scales, sizes).
    std::vector<Tensor> back = {Values((*want)[0].dims(), 9, t), ir::Tensor::Int64s(c.x, {static_cast<int64_t>(c.x.size())})};
    back.insert(back.end(), in.begin() + 1, in.end());
    auto dgot = RunKernel(OpKind::kResizeGrad, a, back, Options{.impl = "direct", .constant_inputs = 0b11110});
    ASSERT_TRUE(dgot.ok()) << c.name << ": " << dgot.status().ToString();
    auto dwant = RunKernel(OpKind::kResizeGrad, a, back, Options{.impl = "reference"});
    ASSERT_TRUE(dwant.ok()) << c.name << ": " << dwant.status().ToString();
    EXPECT_TRUE(SameBitsOrNaNs((*dgot)[0], (*dwant)[0])) << c.name << " gradient " << ir::DTypeName(t);
  }
}

// What the direct kernel declines still runs (on the reference): a resized
// channel axis, and scales known only at run time.
TEST_P(DirectResize, DeclinesWhatTheReferenceRuns) {
  const DType t = GetParam().dtype;
  Attributes a;
  a.Set("mode", std::string("linear"));
  const std::vector<Tensor> channels = {Values({1, 3, 4, 4}, 3, t), Tensor(), Floats({1, 2, 2, 2}), Tensor()};
  const std::vector<Tensor> planes = {Values({1, 3, 4, 4}, 3, t), Tensor(), Floats({1, 1, 2, 2}), Tensor()};
  for (const auto& [what, in, constants] : {std::tuple{"channels", channels, 0b1110u}, std::tuple{"run-time scales", planes, 0u}}) {
    EXPECT_FALSE(RunKernel(OpKind::kResize, a, in, Options{.impl = "direct", .constant_inputs = constants}).ok()) << what;
    auto any = RunKernel(OpKind::kResize, a, in, Options{.impl = "", .constant_inputs = constants});
    ASSERT_TRUE(any.ok()) << what << ": " << any.status().ToString();
    EXPECT_EQ((*any)[0].dims(), (I{1, std::string(what) == "channels" ? 6 : 3, 8, 8})) << what;
  }
}

}  // namespace
}  // namespace amptrain::kernels::testing
