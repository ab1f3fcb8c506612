// The direct recurrent kernels (RNN, GRU, LSTM and their backward ops;
// kernels/cpu/direct_rnn.cc) against the reference (kernels/cpu/rnn.cc,
// which computes in double) in fp32, bf16 and fp16: every output of the
// forward and backward ops, over the attributes PyTorch exports and the rest
// the reference takes (directions, batch-first layout, clip, GRU's
// linear_before_reset, Relu, peepholes, initial states, sequence lengths
// including 0).
#include <string>

#include "ir/rnn.h"
#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/register.h"
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

class DirectRnn : public ::testing::TestWithParam<KernelPath> {};
INSTANTIATE_DIRECT_PATHS(DirectRnn);

// On the error normalized by the reference's largest magnitude: fp32 1e-5
// (the direct kernel rounds its GEMMs and gates to fp32 where the reference
// keeps double: at most 8.6e-7 measured over these cases); fp16 and
// widened bf16 outputs are both rounded once from an fp32-accurate value, so
// they differ by at most one step (2^-11, 2^-8) of the largest value
// (measured: 1.7e-4, 1.1e-4): 2e-3 and 1e-2. Where bf16 is native (a CPU
// whose oneDNN bf16 is faster than fp32) every product's operands are
// rounded to bf16 first, as oneDNN's bf16 kernels and PyTorch's autocast
// round them: a few steps of 2^-8 (measured: 7.8e-3), 3e-2.
double RnnTolerance(DType t) {
  if (t == DType::kBFloat16) return cpu::Cpu().bf16_faster() ? 3e-2 : 1e-2;
  return t == DType::kFloat16 ? 2e-3 : 1e-5;
}

struct Case {
  std::string name;
  OpKind op;
  int64_t seq, batch, input, hidden, dirs, layout;
  bool bias, initial, peepholes;
  std::vector<int32_t> lens;  // empty: every sequence is seq long
  Attributes attrs;
};

int64_t GatesOf(OpKind op) { return op == OpKind::kLSTM ? 4 : op == OpKind::kGRU ? 3 : 1; }

OpKind GradOf(OpKind op) {
  return op == OpKind::kLSTM ? OpKind::kLSTMGrad : op == OpKind::kGRU ? OpKind::kGRUGrad : OpKind::kRNNGrad;
}

// The forward op's inputs in `t`: weights in [-0.4, 0.4] (a recurrence that
// neither dies nor explodes over the steps), data in [-1, 1].
std::vector<Tensor> ForwardInputs(const Case& c, DType t, uint32_t seed) {
  const int64_t g = GatesOf(c.op) * c.hidden;
  const I state = c.layout == 0 ? I{c.dirs, c.batch, c.hidden} : I{c.batch, c.dirs, c.hidden};
  std::vector<Tensor> in = {
      gradtest::Random(c.layout == 0 ? I{c.seq, c.batch, c.input} : I{c.batch, c.seq, c.input}, seed, t),
      gradtest::Random({c.dirs, g, c.input}, seed + 1, t, -0.4, 0.4),
      gradtest::Random({c.dirs, g, c.hidden}, seed + 2, t, -0.4, 0.4),
      c.bias ? gradtest::Random({c.dirs, 2 * g}, seed + 3, t, -0.4, 0.4) : Tensor(),
      Tensor(),
      c.initial ? gradtest::Random(state, seed + 4, t) : Tensor()};
  if (!c.lens.empty()) {
    in[4] = *Tensor::Zeros(DType::kInt32, {c.batch});
    for (int64_t b = 0; b < c.batch; ++b) in[4].data<int32_t>()[b] = c.lens[static_cast<size_t>(b)];
  }
  if (c.op == OpKind::kLSTM) {
    in.push_back(c.initial ? gradtest::Random(state, seed + 5, t) : Tensor());
    in.push_back(c.peepholes ? gradtest::Random({c.dirs, 3 * c.hidden}, seed + 6, t, -0.4, 0.4) : Tensor());
  }
  return in;
}

void ExpectCloseToReference(const std::string& what, OpKind op, const Attributes& a, const std::vector<Tensor>& in,
                            size_t outputs) {
  ExpectDirectCloseToReference(what, op, a, in, Options{.num_outputs = outputs}, RnnTolerance);
}

Attributes A(std::initializer_list<std::pair<std::string, ir::AttrValue>> values) {
  Attributes a;
  for (const auto& [k, v] : values) a.Set(k, v);
  return a;
}

std::vector<Case> Cases() {
  const auto bidi = std::make_pair(std::string("direction"), ir::AttrValue(std::string("bidirectional")));
  const auto rev = std::make_pair(std::string("direction"), ir::AttrValue(std::string("reverse")));
  const auto lbr = std::make_pair(std::string("linear_before_reset"), ir::AttrValue(int64_t{1}));
  const auto clip = std::make_pair(std::string("clip"), ir::AttrValue(0.3f));
  const auto batch_first = std::make_pair(std::string("layout"), ir::AttrValue(int64_t{1}));
  const auto relu = std::make_pair(std::string("activations"),
                                   ir::AttrValue(std::vector<std::string>{"Relu", "Relu"}));
  return {
      {"LSTM forward, no optional input", OpKind::kLSTM, 5, 3, 4, 6, 1, 0, false, false, false, {}, {}},
      {"LSTM bidirectional, everything", OpKind::kLSTM, 6, 4, 5, 7, 2, 0, true, true, true, {6, 3, 0, 1}, A({bidi})},
      {"LSTM reverse, batch-first, clipped", OpKind::kLSTM, 5, 3, 4, 6, 1, 1, true, true, false, {5, 2, 4},
       A({rev, batch_first, clip})},
      {"LSTM rows over threads", OpKind::kLSTM, 4, 64, 9, 40, 1, 0, true, true, false, {}, {}},
      {"GRU linear_before_reset 0", OpKind::kGRU, 5, 3, 4, 6, 1, 0, true, true, false, {}, {}},
      {"GRU linear_before_reset 0, clipped, lengths", OpKind::kGRU, 6, 4, 3, 5, 1, 0, true, false, false,
       {6, 0, 2, 5}, A({clip})},
      {"GRU linear_before_reset 1 (PyTorch), bidirectional, lengths", OpKind::kGRU, 6, 4, 5, 7, 2, 0, true, true,
       false, {6, 3, 0, 1}, A({bidi, lbr})},
      {"GRU batch-first, reverse", OpKind::kGRU, 5, 3, 4, 6, 1, 1, true, false, false, {}, A({rev, batch_first, lbr})},
      {"GRU rows over threads", OpKind::kGRU, 4, 64, 9, 48, 1, 0, true, true, false, {}, A({lbr})},
      {"RNN tanh", OpKind::kRNN, 5, 3, 4, 6, 1, 0, true, true, false, {}, {}},
      {"LSTM without steps", OpKind::kLSTM, 0, 3, 4, 6, 2, 0, true, true, true, {}, A({bidi})},
      {"GRU without rows", OpKind::kGRU, 4, 0, 4, 6, 1, 0, true, true, false, {}, A({lbr})},
      {"RNN relu, bidirectional, lengths, clipped", OpKind::kRNN, 6, 4, 5, 7, 2, 0, true, true, false,
       {6, 3, 0, 1}, A({bidi, relu, clip})},
  };
}

TEST_P(DirectRnn, ForwardCloseToReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  for (const Case& c : Cases()) {
    const std::vector<Tensor> in = ForwardInputs(c, t, 11);
    ExpectCloseToReference(c.name, c.op, c.attrs, in, c.op == OpKind::kLSTM ? 3 : 2);
  }
}

TEST_P(DirectRnn, BackwardCloseToReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  for (const Case& c : Cases()) {
    std::vector<Tensor> in = ForwardInputs(c, t, 23);
    // dY, dY_h (dY_c): the gradients of every forward output.
    auto forward = RunKernel(c.op, c.attrs, in, Options{.num_outputs = c.op == OpKind::kLSTM ? size_t{3} : size_t{2}});
    ASSERT_TRUE(forward.ok()) << c.name << ": " << forward.status().ToString();
    for (size_t o = 0; o < forward->size(); ++o)
      in.push_back(gradtest::Random((*forward)[o].dims(), 40 + static_cast<uint32_t>(o), t));
    ExpectCloseToReference(c.name, GradOf(c.op), c.attrs, in, c.op == OpKind::kLSTM ? 7 : 5);
    // Without dY (a model that reads only Y_h): the reference takes it as 0.
    std::vector<Tensor> no_dy = in;
    no_dy[in.size() - forward->size()] = Tensor();
    ExpectCloseToReference(c.name + " without dY", GradOf(c.op), c.attrs, no_dy, c.op == OpKind::kLSTM ? 7 : 5);
  }
}

// Training graphs give the forward op its reserve output and the backward op
// that reserve (ir/rnn.h): the backward reads the steps from it instead of
// running the forward again. Its gradients match the reference's (which
// ignores the reserve), whether the direct or the reference forward wrote
// it; the forward's own outputs are the same bits with or without it.
TEST_P(DirectRnn, BackwardFromReserveCloseToReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  for (const Case& c : Cases()) {
    const ir::RnnConfig config = *ir::ParseRnnConfig(c.op, c.attrs);
    const size_t outputs = config.reserve_output();
    std::vector<Tensor> in = ForwardInputs(c, t, 31);
    auto plain = RunKernel(c.op, c.attrs, in, Options{.impl = "direct", .num_outputs = outputs});
    ASSERT_TRUE(plain.ok()) << c.name << ": " << plain.status().ToString();
    std::vector<Tensor> reserves;
    for (const char* impl : {"direct", "reference"}) {
      auto forward = RunKernel(c.op, c.attrs, in, Options{.impl = impl, .num_outputs = outputs + 1});
      ASSERT_TRUE(forward.ok()) << c.name << " " << impl << ": " << forward.status().ToString();
      if (std::string(impl) == "direct") {
        for (size_t o = 0; o < outputs; ++o)
          EXPECT_TRUE(SameBits((*forward)[o], (*plain)[o])) << c.name << ": output " << o << " with a reserve";
      }
      reserves.push_back((*forward)[outputs]);
    }
    for (size_t o = 0; o < outputs; ++o)
      in.push_back(gradtest::Random((*plain)[o].dims(), 50 + static_cast<uint32_t>(o), t));
    const std::vector<Tensor> without = in;
    for (size_t k = 0; k < reserves.size(); ++k) {
      std::vector<Tensor> with = without;
      with.push_back(reserves[k]);
      const std::string what = c.name + (k == 0 ? ", reserve of the direct forward" : ", reserve of the reference forward");
      Options opt{.impl = "direct", .num_outputs = c.op == OpKind::kLSTM ? size_t{7} : size_t{5}};
      auto got = RunKernel(GradOf(c.op), c.attrs, with, opt);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
      opt.impl = "reference";
      auto want = RunKernel(GradOf(c.op), c.attrs, without, opt);
      ASSERT_TRUE(want.ok()) << what << ": " << want.status().ToString();
      for (size_t o = 0; o < want->size(); ++o)
        EXPECT_LT(gradtest::NormalizedError((*got)[o], (*want)[o]), RnnTolerance(t)) << what << " output " << o;
    }
  }
}

// The direct kernels are the ones a session picks for fp32, fp16 and bf16.
TEST_P(DirectRnn, ChosenOverTheReference) {
  const DType t = GetParam().dtype;
  for (OpKind op : {OpKind::kRNN, OpKind::kGRU, OpKind::kLSTM, OpKind::kLSTMGrad}) {
    const Case c{"", op == OpKind::kLSTMGrad ? OpKind::kLSTM : op, 3, 2, 3, 4, 1, 0, true, false, false, {}, {}};
    std::vector<Tensor> in = ForwardInputs(c, t, 5);
    Attributes none;
    KernelInit init;
    init.op = op;
    init.attrs = &none;
    for (const Tensor& x : in)
      init.inputs.push_back(x.empty() ? TensorSpec{} : TensorSpec{x.dtype(), x.dims()});
    if (op == OpKind::kLSTMGrad)
      for (int i = 0; i < 3; ++i) init.inputs.push_back(TensorSpec{});
    auto entry = Registry::Global().Select(init);
    ASSERT_TRUE(entry.ok()) << entry.status().ToString();
    EXPECT_EQ((*entry)->impl, "direct") << ir::Schema(op).name;
  }
}

}  // namespace
}  // namespace amptrain::kernels::testing
