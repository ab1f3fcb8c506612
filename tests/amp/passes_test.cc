// Pass tests: which node computes in which dtype and how many Casts sit where,
// after each pass, for every level, custom lists, node overrides and pins.
#include "amp/passes.h"

#include <gtest/gtest.h>

#include "amp_test_util.h"
#include "ir/printer.h"

namespace amptrain::amp {
namespace {

using ir::DType;
using ir::OpKind;
using testing::Count;
using testing::ExpectWellFormed;
using testing::FindNode;
using testing::OutDType;
using testing::WeightCasts;

constexpr DType F32 = DType::kFloat32, F16 = DType::kFloat16, BF16 = DType::kBFloat16;

// x[1,3,8,8] -> conv -> bn -> relu -> gap -> flat -> fc -> sm -> y[1,5]
std::unique_ptr<ir::Graph> MiniNet(int64_t opset = 17) {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = opset;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {1, 3, 8, 8}));
  ir::Node* conv = g->AddNode(OpKind::kConv, {x, testing::Weight(*g, "W", {4, 3, 3, 3}, 1),
                                             testing::Weight(*g, "B", {4}, 2)}, 1, "conv");
  conv->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* bn = testing::UnitBatchNorm(*g, conv->output(0), "bn");
  ir::Node* relu = g->AddNode(OpKind::kRelu, {bn->output(0)}, 1, "relu");
  ir::Node* gap = g->AddNode(OpKind::kGlobalAveragePool, {relu->output(0)}, 1, "gap");
  ir::Node* flat = g->AddNode(OpKind::kFlatten, {gap->output(0)}, 1, "flat");
  ir::Node* fc = g->AddNode(OpKind::kGemm, {flat->output(0), testing::Weight(*g, "Wf", {5, 4}, 3),
                                           testing::Weight(*g, "Bf", {5}, 4)}, 1, "fc");
  fc->attrs().Set("transB", int64_t{1});
  ir::Node* sm = g->AddNode(OpKind::kSoftmax, {fc->output(0)}, 1, "sm", {"y"});
  g->AddOutput(sm->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

// Each node's decision under `p` (export capability).
std::map<ir::NodeId, Decision> Decisions(const ir::Graph& g, const Policy& p) {
  std::map<ir::NodeId, Decision> d;
  StatusOr<PrecisionPlan> plan = PlanPrecision(g, p, Capability::Export());
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (plan.ok())
    for (const auto& [id, np] : plan->nodes) d[id] = np.decision;
  return d;
}

struct Expect {
  std::map<std::string, DType> dtypes;
  int casts_after_insert, casts_after_elim;
};

// Runs the passes one by one, checking the structure after each.
void CheckPasses(const Policy& p, const Expect& want, int64_t opset = 17) {
  auto g = MiniNet(opset);
  StatusOr<PrecisionPlan> plan = PlanPrecision(*g, p, Capability::Export());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(Count(*g, OpKind::kCast), 0) << "planning changes nothing";
  for (const auto& [name, dt] : want.dtypes) EXPECT_EQ(plan->Find(FindNode(*g, name)->id())->decision.dtype, dt) << name;
  auto ins = MakeApplyPlanPass(&*plan)->Run(*g);
  ASSERT_TRUE(ins.ok()) << ins.status().ToString();
  EXPECT_EQ(Count(*g, OpKind::kCast), want.casts_after_insert);
  for (const auto& [name, dt] : want.dtypes) EXPECT_EQ(OutDType(*g, name), dt) << name;
  ASSERT_TRUE(ir::Verify(*g).ok());
  ASSERT_TRUE(MakeEliminateCastsPass()->Run(*g).ok());
  EXPECT_EQ(Count(*g, OpKind::kCast), want.casts_after_elim);
  EXPECT_EQ(g->type(g->outputs()[0]).dtype, F32);
  EXPECT_EQ(g->name(g->outputs()[0]), "y");
  ExpectWellFormed(*g);
}

Policy Level(Level l, DType low = F16) {
  Policy p;
  p.level = l;
  p.low = low;
  return p;
}

TEST(AmpPasses, O0KeepsEverythingFp32) {
  CheckPasses(Level(Level::kO0), {{{"conv", F32}, {"bn", F32}, {"relu", F32}, {"fc", F32}, {"sm", F32}}, 0, 0});
}

TEST(AmpPasses, O1AllowDenyFollow) {
  // casts: x, W, B, conv->bn, gap->flat, Wf, Bf, fc->sm (flat moves values and
  // feeds only the fp16 fc: it runs fp16, rule 7)
  CheckPasses(Level(Level::kO1), {{{"conv", F16}, {"bn", F32}, {"relu", F32}, {"gap", F32}, {"flat", F16},
                                   {"fc", F16}, {"sm", F32}}, 8, 8});
}

TEST(AmpPasses, O2EverythingButDenylist) {
  // casts: x, W, B, Wf, Bf, fc->sm; bn runs fp16 with its fp32 params
  CheckPasses(Level(Level::kO2), {{{"conv", F16}, {"bn", F16}, {"relu", F16}, {"gap", F16}, {"flat", F16},
                                   {"fc", F16}, {"sm", F32}}, 6, 6});
  auto g = MiniNet();
  ASSERT_TRUE(Convert(*g, Level(Level::kO2)).ok());
  const ir::Node* bn = FindNode(*g, "bn");
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(g->ConstantValue(bn->input(i))->dtype(), F32) << "BN param " << i;
  // Before opset 15 ONNX ties BN's params to X: BN stays fp32 (denylist).
  // casts: x, W, B, conv->bn, bn->relu, Wf, Bf, fc->sm
  CheckPasses(Level(Level::kO2), {{{"conv", F16}, {"bn", F32}, {"relu", F16}, {"fc", F16}, {"sm", F32}}, 8, 8}, 14);
}

TEST(AmpPasses, O3EverythingLowIncludingBatchNorm) {
  // casts: x, 8 weights, sm -> y
  CheckPasses(Level(Level::kO3), {{{"conv", F16}, {"bn", F16}, {"relu", F16}, {"fc", F16}, {"sm", F16}}, 10, 10});
}

TEST(AmpPasses, Bf16UnsupportedOpsStayFp32AtOpset17) {
  auto g = MiniNet();
  std::map<ir::NodeId, Decision> d = Decisions(*g, Level(Level::kO2, BF16));
  EXPECT_EQ(d[FindNode(*g, "conv")->id()].reason, Reason::kUnsupportedLow);
  EXPECT_EQ(d[FindNode(*g, "gap")->id()].reason, Reason::kUnsupportedLow);
  // bn and relu sit between fp32 conv and fp32 gap: bf16 would only round.
  EXPECT_EQ(d[FindNode(*g, "bn")->id()].dtype, F32);
  EXPECT_EQ(d[FindNode(*g, "bn")->id()].reason, Reason::kRoundingOnly);
  EXPECT_EQ(d[FindNode(*g, "relu")->id()].dtype, F32);
  EXPECT_EQ(d[FindNode(*g, "relu")->id()].reason, Reason::kRoundingOnly);
  EXPECT_EQ(d[FindNode(*g, "flat")->id()].dtype, BF16) << "feeds the bf16 fc";
  EXPECT_EQ(d[FindNode(*g, "fc")->id()].dtype, BF16);
  // casts: gap->flat, Wf, Bf, fc->sm (before the rounding-only rule: 6)
  CheckPasses(Level(Level::kO2, BF16),
              {{{"conv", F32}, {"bn", F32}, {"relu", F32}, {"gap", F32}, {"flat", BF16}, {"fc", BF16}}, 4, 4});
  // Conv and the pools accept bfloat16 from opset 22 on.
  CheckPasses(Level(Level::kO2, BF16), {{{"conv", BF16}, {"gap", BF16}, {"relu", BF16}, {"fc", BF16}}, 6, 6}, 22);
}

// x -> Gemm -> op ("act", returned) -> Gemm -> output, at `opset`.
ir::Node* GemmActGemm(ir::Graph& g, OpKind op, int64_t opset) {
  g.info().opset = opset;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(F32, {2, 4}));
  ir::Node* fc1 = g.AddNode(OpKind::kGemm, {x, testing::Weight(g, "W1", {4, 4}, 1)}, 1, "fc1");
  ir::Node* act = g.AddNode(op, {fc1->output(0)}, 1, "act");
  ir::Node* fc2 = g.AddNode(OpKind::kGemm, {act->output(0), testing::Weight(g, "W2", {4, 4}, 2)}, 1, "fc2");
  g.AddOutput(fc2->output(0));
  return act;
}

// ONNX lists bfloat16 for HardSigmoid and HardSwish only from opset 22
// (onnx.defs.get_schema(op, 21 / 22).type_constraints); float16 at any opset.
TEST(AmpPasses, HardActivationsTakeBf16FromOpset22) {
  for (OpKind op : {OpKind::kHardSigmoid, OpKind::kHardSwish})
    for (int64_t opset : {21, 22}) {
      SCOPED_TRACE(StrCat(ir::Schema(op).name, " opset ", opset));
      ir::Graph g;
      ir::Node* act = GemmActGemm(g, op, opset);
      ASSERT_TRUE(g.InferShapes().ok());
      Decision bf16 = Decisions(g, Level(Level::kO2, BF16))[act->id()];
      EXPECT_EQ(bf16.dtype, opset >= 22 ? BF16 : F32);
      if (opset < 22) {
        EXPECT_EQ(bf16.reason, Reason::kUnsupportedLow);
      }
      EXPECT_EQ(Decisions(g, Level(Level::kO2))[act->id()].dtype, F16);
    }
}

// ONNX's Celu takes float32 only, to this day (onnx 1.23): an fp16 export
// keeps it fp32 at any level; Elu, its neighbour, takes float16.
TEST(AmpPasses, CeluStaysFp32InAnFp16Export) {
  for (OpKind op : {OpKind::kCelu, OpKind::kElu}) {
    SCOPED_TRACE(ir::Schema(op).name);
    ir::Graph g;
    ir::Node* act = GemmActGemm(g, op, 17);
    ASSERT_TRUE(g.InferShapes().ok());
    for (amp::Level level : {amp::Level::kO2, amp::Level::kO3}) {
      Decision d = Decisions(g, Level(level))[act->id()];
      EXPECT_EQ(d.dtype, op == OpKind::kCelu ? F32 : F16);
      if (op == OpKind::kCelu) {
        EXPECT_EQ(d.reason, Reason::kUnsupportedLow);
      }
    }
  }
}

TEST(AmpPasses, CustomListsBeatTheLevel) {
  Policy p = Level(Level::kO1);
  p.fp32_ops = {"Gemm"};
  p.low_ops = {"Softmax", "BatchNormalization"};
  auto g = MiniNet();
  std::map<ir::NodeId, Decision> d = Decisions(*g, p);
  EXPECT_EQ(d[FindNode(*g, "fc")->id()].dtype, F32);
  EXPECT_EQ(d[FindNode(*g, "fc")->id()].reason, Reason::kCustomDeny);
  EXPECT_EQ(d[FindNode(*g, "sm")->id()].dtype, F16);
  EXPECT_EQ(d[FindNode(*g, "sm")->id()].reason, Reason::kCustomAllow);
  EXPECT_EQ(d[FindNode(*g, "bn")->id()].dtype, F16);
  EXPECT_EQ(d[FindNode(*g, "relu")->id()].dtype, F16) << "follows the now-fp16 bn";
  EXPECT_EQ(d[FindNode(*g, "conv")->id()].reason, Reason::kLevelAllow);
}

TEST(AmpPasses, NodeOverridesBeatListsAndLaterWins) {
  Policy p = Level(Level::kO2);
  p.low_ops = {"Softmax"};
  p.node_overrides = {{".*", true, F32}, {"conv", false, F16}, {"s.", true, F32}};
  auto g = MiniNet();
  std::map<ir::NodeId, Decision> d = Decisions(*g, p);
  EXPECT_EQ(d[FindNode(*g, "conv")->id()].dtype, F16);
  EXPECT_EQ(d[FindNode(*g, "conv")->id()].reason, Reason::kNodeOverride);
  EXPECT_EQ(d[FindNode(*g, "fc")->id()].dtype, F32);
  EXPECT_EQ(d[FindNode(*g, "sm")->id()].dtype, F32) << "regex override beats the fp16 op list";
  EXPECT_EQ(d[FindNode(*g, "sm")->id()].reason, Reason::kNodeOverride);
  // Regexes match whole names: "s." matches "sm" but not "conv".
  auto r = Convert(*g, p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectWellFormed(*g);
}

TEST(AmpPasses, PinOfTiedSlotDecidesTheNode) {
  Policy p = Level(Level::kO1);
  p.pins = {{"fc", false, 0, F32}};
  auto g = MiniNet();
  std::map<ir::NodeId, Decision> d = Decisions(*g, p);
  EXPECT_EQ(d[FindNode(*g, "fc")->id()].dtype, F32);
  EXPECT_EQ(d[FindNode(*g, "fc")->id()].reason, Reason::kNodeOverride);
}

TEST(AmpPasses, PinCannotBreakStructuralSlot) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {1, 1, 2, 2}));
  ir::Value scales = g->AddInitializer("scales", ir::Tensor::Floats({1, 1, 2, 2}, {4}));
  ir::Node* r = g->AddNode(OpKind::kResize, {x, ir::Value{}, scales}, 1, "up");
  g->AddOutput(r->output(0));
  ASSERT_TRUE(g->InferShapes().ok());
  Policy p = Level(Level::kO3);
  p.pins = {{"up", false, 2, F16}};
  auto st = Convert(*g, p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("Resize node 'up'"), std::string::npos) << st.status().message();
  EXPECT_NE(st.status().message().find("structural"), std::string::npos) << st.status().message();
}

TEST(AmpPasses, PinOfFreeSlotCastsOnlyThatInput) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {4}));
  ir::Value e = g->AddInitializer("e", ir::Tensor::Floats({2}, {1}));
  ir::Node* pw = g->AddNode(OpKind::kPow, {x, e}, 1, "pow");
  g->AddOutput(pw->output(0));
  ASSERT_TRUE(g->InferShapes().ok());
  Policy p = Level(Level::kO1);
  p.pins = {{"p.w", true, 1, F16}};
  ConvertOptions o;
  o.convert_initializers = false;
  ASSERT_TRUE(Convert(*g, p, o).ok());
  EXPECT_EQ(OutDType(*g, "pow"), F32);
  EXPECT_EQ(g->type(FindNode(*g, "pow")->input(1)).dtype, F16);
  ExpectWellFormed(*g);
}

// Training (convert_initializers off) keeps the weights fp32 masters but stores
// Constant nodes low once, clamped to the fp16 range as the export stores
// them: F.normalize's eps (Clip min 1e-12) becomes 2^-24, not 0, so a zero
// row divides 0 by 2^-24 (0) and not by 0 (NaN), as in swin_v2's padded
// attention windows.
TEST(AmpPasses, TrainingStoresConstantsLowClampedAndKeepsWeightsMasters) {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = 17;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {2, 4}));
  ir::Value w = g->AddInitializer("w", ir::Tensor::Floats({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}));
  ir::Node* fc = g->AddNode(OpKind::kGemm, {x, w}, 1, "fc");
  fc->attrs().Set("transB", int64_t{1});
  ir::Node* norm = g->AddNode(OpKind::kReduceL2, {fc->output(0)}, 1, "norm");
  norm->attrs().Set("axes", std::vector<int64_t>{1});
  ir::Node* eps = g->AddNode(OpKind::kConstant, {}, 1, "eps");
  eps->attrs().Set("value", ir::Tensor::Scalar(1e-12f));
  ir::Node* clip = g->AddNode(OpKind::kClip, {norm->output(0), eps->output(0)}, 1, "clip");
  ir::Node* div = g->AddNode(OpKind::kDiv, {fc->output(0), clip->output(0)}, 1, "div");
  g->AddOutput(div->output(0));
  ASSERT_TRUE(g->InferShapes().ok());
  ConvertOptions training;
  training.convert_initializers = false;
  auto r = Convert(*g, Level(Level::kO2), training);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectWellFormed(*g);
  EXPECT_EQ(OutDType(*g, "clip"), F16);
  const ir::Tensor* stored = g->ConstantValue(FindNode(*g, "clip")->input(1));
  ASSERT_NE(stored, nullptr) << "the Clip reads the Constant itself, not a Cast of it";
  ASSERT_EQ(stored->dtype(), F16);
  EXPECT_EQ(stored->data<uint16_t>()[0], 0x0001) << "1e-12 clamped to the smallest fp16 subnormal, 2^-24";
  EXPECT_EQ(r->clamped_values, 1);
  EXPECT_EQ(g->type(w).dtype, F32) << "the weight stays an fp32 master";
  EXPECT_EQ(WeightCasts(*g), 1);
}

TEST(AmpPasses, NoKeepIoTypesConvertsInputsAndOutputs) {
  Policy p = Level(Level::kO2);
  p.keep_io_types = false;
  auto g = MiniNet();
  auto r = Convert(*g, p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(g->type(g->inputs()[0]).dtype, F16);
  EXPECT_EQ(g->type(g->outputs()[0]).dtype, F16);
  EXPECT_EQ(g->name(g->outputs()[0]), "y");
  // casts: fc->sm, sm->y; weights converted, BN params fp32
  EXPECT_EQ(Count(*g, OpKind::kCast), 2);
  ExpectWellFormed(*g);
}

TEST(AmpPasses, EliminationFoldsExactChainsOnly) {
  // x:f16 -> Cast(f32) -> Cast(f16) -> Relu  and  y:f32 -> Cast(f16) -> Cast(f32) -> Relu
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(F16, {4}));
  ir::Value y = g.AddInput("y", ir::TensorType::Of(F32, {4}));
  auto cast = [&](ir::Value v, DType to, const std::string& name) {
    ir::Node* c = g.AddNode(OpKind::kCast, {v}, 1, name);
    c->attrs().Set("to", static_cast<int64_t>(ir::OnnxFromDType(to)));
    return c->output(0);
  };
  ir::Node* r1 = g.AddNode(OpKind::kRelu, {cast(cast(x, F32, "a"), F16, "b")}, 1, "r1");
  ir::Node* r2 = g.AddNode(OpKind::kRelu, {cast(cast(y, F16, "c"), F32, "d")}, 1, "r2");
  ir::Node* r3 = g.AddNode(OpKind::kRelu, {cast(y, F32, "same")}, 1, "r3");
  for (ir::Node* r : {r1, r2, r3}) g.AddOutput(r->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  ASSERT_TRUE(MakeEliminateCastsPass()->Run(g).ok());
  EXPECT_EQ(r1->input(0), x) << "fp16 -> fp32 -> fp16 folds to nothing";
  EXPECT_EQ(Count(g, OpKind::kCast), 2) << "fp32 -> fp16 -> fp32 changes values and stays";
  EXPECT_EQ(g.producer(r2->input(0))->name(), "d");
  EXPECT_EQ(r3->input(0), y) << "a cast to the same type is removed";
}

TEST(AmpPasses, CastsSinkThroughMovementOps) {
  // Conv(f16) -> [Cast f32] -> Reshape -> Transpose -> [Cast f16] -> MatMul, written
  // with the casts around the movement ops: they disappear.
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(F16, {2, 3}));
  ir::Node* c1 = g.AddNode(OpKind::kCast, {x}, 1, "up");
  c1->attrs().Set("to", int64_t{1});
  ir::Node* rs = g.AddNode(OpKind::kReshape, {c1->output(0), g.AddInitializer("shape", ir::Tensor::Int64s({3, 2}, {2}))},
                           1, "rs");
  ir::Node* tr = g.AddNode(OpKind::kTranspose, {rs->output(0)}, 1, "tr");
  ir::Node* c2 = g.AddNode(OpKind::kCast, {tr->output(0)}, 1, "down");
  c2->attrs().Set("to", int64_t{10});
  ir::Node* relu = g.AddNode(OpKind::kRelu, {c2->output(0)}, 1, "relu");
  g.AddOutput(relu->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  ASSERT_TRUE(MakeEliminateCastsPass()->Run(g).ok());
  EXPECT_EQ(Count(g, OpKind::kCast), 0);
  EXPECT_EQ(OutDType(g, "rs"), F16);
  EXPECT_EQ(OutDType(g, "tr"), F16);
  ExpectWellFormed(g);
}

TEST(AmpPasses, DuplicateCastsMerge) {
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(F32, {4}));
  for (const char* name : {"r1", "r2"}) {
    ir::Node* c = g.AddNode(OpKind::kCast, {x}, 1);
    c->attrs().Set("to", int64_t{10});
    g.AddOutput(g.AddNode(OpKind::kRelu, {c->output(0)}, 1, name)->output(0));
  }
  ASSERT_TRUE(g.InferShapes().ok());
  ASSERT_TRUE(MakeEliminateCastsPass()->Run(g).ok());
  EXPECT_EQ(Count(g, OpKind::kCast), 1);
  EXPECT_EQ(FindNode(g, "r1")->input(0), FindNode(g, "r2")->input(0));
}

TEST(AmpPasses, ReportCountsAndBytes) {
  auto g = MiniNet();
  auto r = Convert(*g, Level(Level::kO2));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes.size(), 7u);
  EXPECT_EQ(r->casts_original, 0);
  EXPECT_EQ(r->casts_inserted, 6);
  EXPECT_EQ(r->casts_final, 2);
  EXPECT_EQ(r->casts_removed, 4) << "four weight casts became fp16 initializers";
  EXPECT_EQ(WeightCasts(*g), 0);
  // W, B, Wf, Bf halve; the BN params (16 floats) stay fp32.
  int64_t convertible = (4 * 3 * 3 * 3 + 4 + 5 * 4 + 5) * 4;
  EXPECT_EQ(r->weight_bytes_before, convertible + 16 * 4);
  EXPECT_EQ(r->weight_bytes_after, convertible / 2 + 16 * 4);
  EXPECT_EQ(r->activation_bytes_after, ActivationBytes(*g));
  EXPECT_GT(r->activation_bytes_fp32, 0);
  for (const NodeReport& n : r->nodes) {
    if (n.name == "sm") {
      EXPECT_EQ(n.reason, Reason::kLevelDeny);
    }
  }
}

}  // namespace
}  // namespace amptrain::amp

namespace amptrain::amp {
namespace {

// Planning is a pure function: the graph is unchanged (same text), two plans
// of one graph are equal, and the plan alone drives the cast pass.
TEST(PrecisionPlan, PureAndComplete) {
  auto g = MiniNet();
  std::string before = ir::PrintGraph(*g);
  Policy p = Level(Level::kO2);
  StatusOr<PrecisionPlan> a = PlanPrecision(*g, p, Capability::Export());
  StatusOr<PrecisionPlan> b = PlanPrecision(*g, p, Capability::Export());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(ir::PrintGraph(*g), before);
  ASSERT_EQ(a->nodes.size(), b->nodes.size());
  for (const auto& [id, np] : a->nodes) {
    const NodePlan* other = b->Find(id);
    ASSERT_NE(other, nullptr);
    EXPECT_EQ(np.decision.dtype, other->decision.dtype);
    ASSERT_EQ(np.inputs.size(), g->node(id)->num_inputs()) << "one slot plan per input";
  }
  // Every compute node is planned.
  auto order = g->TopologicalOrder();
  ASSERT_TRUE(order.ok());
  for (const ir::Node* n : *order) {
    if (n->op() == OpKind::kConstant) continue;
    EXPECT_NE(a->Find(n->id()), nullptr) << n->name();
  }
  EXPECT_EQ(a->nodes.size(), 7u);
  // Slot rules: BN's params stay fp32 (kOriginal), X follows the node; Conv's
  // W is read in the compute dtype.
  const NodePlan* bn = a->Find(FindNode(*g, "bn")->id());
  EXPECT_EQ(bn->inputs[0].rule, SlotRule::kCompute);
  EXPECT_EQ(bn->inputs[0].dtype, F16);
  for (size_t s = 1; s < 5; ++s) {
    EXPECT_EQ(bn->inputs[s].rule, SlotRule::kOriginal) << s;
    EXPECT_EQ(bn->inputs[s].dtype, F32) << s;
  }
  EXPECT_EQ(a->Find(FindNode(*g, "conv")->id())->inputs[1].dtype, F16);
  EXPECT_EQ(a->graph_inputs, std::vector<DType>{F32}) << "keep_io_types";
  EXPECT_EQ(a->graph_outputs, std::vector<DType>{F32});
  // Editing the plan, not the policy, changes what the cast pass does.
  PrecisionPlan edited = *a;
  for (auto& [id, np] : edited.nodes)
    for (SlotPlan& sp : np.inputs) sp = SlotPlan{};
  edited.graph_outputs = {F32};
  ASSERT_TRUE(MakeApplyPlanPass(&edited)->Run(*g).ok());
  EXPECT_EQ(Count(*g, OpKind::kCast), 0) << "every slot kept: no cast";
}

TEST(PrecisionPlan, ReportsPatternsThatMatchNoNode) {
  auto g = MiniNet();
  Policy p = Level(Level::kO1);
  p.node_overrides = {{"conv", false, F32}, {"convv", false, F32}, {"f.*", true, F32}, {"zz.*", true, F32}};
  p.pins = {{"fc", false, 1, F32}, {"fc", false, 7, F32}};
  StatusOr<PrecisionPlan> plan = PlanPrecision(*g, p, Capability::Export());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->unmatched, (std::vector<std::string>{"convv", "re:zz.*", "pin fc input 7"}));
}

TEST(PrecisionPlan, ForAnotherGraphIsRefused) {
  auto g = MiniNet();
  StatusOr<PrecisionPlan> plan = PlanPrecision(*g, Level(Level::kO2), Capability::Export());
  ASSERT_TRUE(plan.ok());
  plan->graph_inputs.push_back(F32);
  StatusOr<bool> r = MakeApplyPlanPass(&*plan)->Run(*g);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("another graph"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace amptrain::amp
