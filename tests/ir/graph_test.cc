// Graph, rewrite API, verifier, pass manager and printer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "ir/graph.h"
#include "ir/pass.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace amptrain::ir {
namespace {

TensorType F32(std::vector<int64_t> dims) { return TensorType::Of(DType::kFloat32, dims); }

TEST(Graph, BuildsAndTracksUses) {
  Graph g;
  Value x = g.AddInput("x", F32({2, 3}));
  Value w = g.AddInitializer("w", *Tensor::Zeros(DType::kFloat32, {3, 4}));
  Node* mm = g.AddNode(OpKind::kMatMul, {x, w}, 1, "mm");
  Node* relu = g.AddNode(OpKind::kRelu, {mm->output(0)}, 1, "relu");
  g.AddOutput(relu->output(0));
  ASSERT_TRUE(Verify(g).ok()) << Verify(g).message();
  EXPECT_EQ(g.uses(x).size(), 1u);
  EXPECT_EQ(g.uses(mm->output(0))[0].node, relu->id());
  EXPECT_EQ(g.FindValue("w"), w);
  EXPECT_NE(g.ConstantValue(w), nullptr);
  EXPECT_EQ(g.ConstantValue(x), nullptr);
  auto order = g.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  ASSERT_EQ(order->size(), 2u);
  EXPECT_EQ((*order)[0], mm);
}

TEST(Graph, ReplaceAllUsesAndRemove) {
  Graph g;
  Value x = g.AddInput("x", F32({4}));
  Node* id = g.AddNode(OpKind::kIdentity, {x}, 1, "id");
  Node* a = g.AddNode(OpKind::kRelu, {id->output(0)}, 1, "a");
  Node* b = g.AddNode(OpKind::kNeg, {id->output(0)}, 1, "b");
  g.AddOutput(a->output(0));
  g.AddOutput(id->output(0));
  EXPECT_FALSE(g.RemoveNode(id).ok());  // still used
  g.ReplaceAllUsesWith(id->output(0), x);
  EXPECT_TRUE(g.uses(id->output(0)).empty());
  EXPECT_EQ(g.outputs()[1], x);
  EXPECT_EQ(g.uses(x).size(), 3u);  // id itself, a, b
  ASSERT_TRUE(g.RemoveNode(id).ok());
  EXPECT_EQ(g.uses(x).size(), 2u);
  EXPECT_FALSE(g.FindValue("id:0").valid());
  EXPECT_EQ(g.RemoveDeadNodes(), 1u);  // b feeds nothing
  EXPECT_EQ(g.node(b->id()), nullptr);
  EXPECT_TRUE(Verify(g).ok()) << Verify(g).message();
}

TEST(Graph, UniqueNamesAndRename) {
  Graph g;
  Value x = g.AddInput("x", F32({1}));
  Node* n1 = g.AddNode(OpKind::kRelu, {x}, 1, "r", {"y"});
  Node* n2 = g.AddNode(OpKind::kRelu, {x}, 1, "r2", {"y"});
  EXPECT_EQ(g.name(n1->output(0)), "y");
  EXPECT_NE(g.name(n2->output(0)), "y");
  EXPECT_FALSE(g.RenameValue(n2->output(0), "y").ok());
  EXPECT_TRUE(g.RenameValue(n2->output(0), "z").ok());
  EXPECT_EQ(g.FindValue("z"), n2->output(0));
}

TEST(Graph, CloneIsIndependent) {
  Graph g;
  Value x = g.AddInput("x", F32({1}));
  Node* r = g.AddNode(OpKind::kRelu, {x}, 1, "r");
  g.AddOutput(r->output(0));
  auto c = g.Clone();
  Node* extra = c->AddNode(OpKind::kNeg, {c->outputs()[0]}, 1, "n");
  c->SetOutput(0, extra->output(0));
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(c->num_nodes(), 3u);
  EXPECT_TRUE(Verify(*c).ok());
  EXPECT_TRUE(Verify(g).ok());
}

// A PyTorch attention export builds a Reshape target from Shape and index
// arithmetic on Constants (Mod, Add) before Slice. InferShapes carries the
// values between the rules, so the Reshape and what follows it get shapes
// before FoldConstants runs; the graph itself is not changed.
TEST(Graph, InferShapesCarriesValuesBetweenRules) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {16, 2, 192}));
  auto constant = [&](const char* name, std::vector<int64_t> v) {
    Node* c = g.AddNode(OpKind::kConstant, {}, 1, name);
    const int64_t n = static_cast<int64_t>(v.size());
    c->attrs().Set("value", Tensor::Int64s(std::move(v), {n}));
    return c->output(0);
  };
  Node* shape = g.AddNode(OpKind::kShape, {x}, 1, "shape");
  Node* mod = g.AddNode(OpKind::kMod, {constant("two", {2}), constant("three", {3})}, 1, "mod");
  Node* slice = g.AddNode(OpKind::kSlice, {shape->output(0), constant("zero", {0}), mod->output(0)}, 1, "slice");
  Node* concat = g.AddNode(OpKind::kConcat, {slice->output(0), constant("heads", {3, 64})}, 1, "concat");
  concat->attrs().Set("axis", int64_t{0});
  Node* reshape = g.AddNode(OpKind::kReshape, {x, concat->output(0)}, 1, "reshape");
  Node* unsqueeze = g.AddNode(OpKind::kUnsqueeze, {reshape->output(0), constant("axes", {0})}, 1, "unsqueeze");
  g.AddOutput(unsqueeze->output(0));
  const size_t nodes = g.num_nodes();
  Status s = g.InferShapes();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(g.type(slice->output(0)).ToString(), "int64[2]");
  EXPECT_EQ(g.type(reshape->output(0)).ToString(), "float32[16,2,3,64]");
  EXPECT_EQ(g.type(unsqueeze->output(0)).ToString(), "float32[1,16,2,3,64]");
  EXPECT_EQ(g.num_nodes(), nodes);
  EXPECT_EQ(g.ConstantValue(mod->output(0)), nullptr);  // computed, not folded
}

TEST(Verifier, CatchesBadArity) {
  Graph g;
  Value x = g.AddInput("x", F32({1}));
  Node* add = g.AddNode(OpKind::kAdd, {x}, 1, "lonely_add");
  g.AddOutput(add->output(0));
  Status s = Verify(g);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("lonely_add"), std::string::npos) << s.message();
}

TEST(Verifier, CatchesCycle) {
  Graph g;
  Value x = g.AddInput("x", F32({1}));
  Node* a = g.AddNode(OpKind::kAdd, {x, x}, 1, "a");
  Node* b = g.AddNode(OpKind::kRelu, {a->output(0)}, 1, "b");
  g.SetInput(a, 1, b->output(0));
  g.AddOutput(b->output(0));
  Status s = Verify(g);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cycle"), std::string::npos);
}

TEST(PassManager, VerifiesAndDumps) {
  Graph g;
  Value x = g.AddInput("x", F32({1}));
  Node* r = g.AddNode(OpKind::kRelu, {x}, 1, "r");
  g.AddOutput(r->output(0));
  PassManager pm;
  pm.set_verify(true);
  std::ostringstream dump;
  pm.DumpAfter("noop", &dump);
  pm.Add(std::make_unique<FunctionPass>("noop", [](Graph&) -> StatusOr<bool> { return false; }));
  pm.Add(std::make_unique<FunctionPass>("break", [](Graph& gr) -> StatusOr<bool> {
    gr.AddNode(OpKind::kAdd, {gr.inputs()[0]}, 1, "bad");  // one input: invalid arity
    return true;
  }));
  auto r1 = pm.Run(g);
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.status().message().find("after pass break"), std::string::npos) << r1.status().message();
  EXPECT_NE(dump.str().find("= Relu(%x)"), std::string::npos) << dump.str();
}

TEST(Printer, ShowsAttributesAndTypes) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, Shape({Dim::Symbolic("batch"), Dim::Static(4)})));
  Node* lr = g.AddNode(OpKind::kLeakyRelu, {x}, 1, "lr", {"y"});
  lr->attrs().Set("alpha", 0.25f);
  g.AddOutput(lr->output(0));
  std::string text = PrintGraph(g);
  EXPECT_NE(text.find("input  x: float32[batch,4]"), std::string::npos) << text;
  EXPECT_NE(text.find("%y = LeakyRelu(%x) {alpha=0.25}"), std::string::npos) << text;
}

TEST(DType, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);          // rounds up to inf
  EXPECT_EQ(FloatToHalf(65519.996f), 0x7bff);
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f), 0x3c00);   // tie -> even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(FloatToHalf(0x1p-24f), 0x0001);          // smallest subnormal
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);          // tie -> even (zero)
  EXPECT_EQ(HalfToFloat(0x0001), 0x1p-24f);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  for (uint32_t h = 0; h < 0x7c00; ++h)               // every finite half round-trips
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h);
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(BitsFloat(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(FloatToBFloat16(BitsFloat(0x3f818000u)), 0x3f82);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
}

TEST(Tensor, CheckedSizes) {
  EXPECT_FALSE(Tensor::Zeros(DType::kFloat32, {-1, 2}).ok());
  EXPECT_FALSE(Tensor::Zeros(DType::kFloat32, {int64_t{1} << 40, int64_t{1} << 40}).ok());
  auto t = Tensor::Zeros(DType::kFloat16, {2, 3});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->nbytes(), 12u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw()) % 64, 0u);
}

// Small buffers come from malloc, large ones (1 MiB on) are mapped pages of
// their own: both zeroed and 64-byte aligned, and a large one is writable to
// its last byte and released when its last owner goes.
TEST(Tensor, SmallAndLargeBuffersAreZeroedAndAligned) {
  for (size_t bytes : {size_t{1}, size_t{4096}, (size_t{1} << 20) - 64, size_t{1} << 20, (size_t{3} << 20) + 5}) {
    std::shared_ptr<std::byte> b = AllocateAligned(bytes);
    ASSERT_NE(b, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % 64, 0u) << bytes;
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; ++i) nonzero += b.get()[i] != std::byte{0};
    EXPECT_EQ(nonzero, 0u) << bytes;
    std::memset(b.get(), 0xab, bytes);
    EXPECT_EQ(b.get()[bytes - 1], std::byte{0xab}) << bytes;
  }
  auto t = Tensor::Zeros(DType::kFloat32, {512, 1024});  // 2 MiB
  ASSERT_TRUE(t.ok());
  Tensor copy = *t;  // shares the buffer
  t->data<float>()[0] = 1.0f;
  *t = Tensor();
  EXPECT_EQ(copy.data<float>()[0], 1.0f);
  EXPECT_EQ(copy.data<float>()[512 * 1024 - 1], 0.0f);
}

TEST(OpTable, EveryOpHasASchema) {
  for (const OpSchema* s : AllSchemas()) {
    EXPECT_FALSE(s->name.empty());
    EXPECT_NE(s->infer, nullptr) << s->name;
  }
  EXPECT_EQ(FindOnnxOp("Conv"), OpKind::kConv);
  EXPECT_FALSE(FindOnnxOp("NotAnOp").has_value());
  EXPECT_EQ(Schema(OpKind::kConv).precision, PrecisionClass::kAllow);
  EXPECT_TRUE(Schema(OpKind::kConcat).is_differentiable(7));
  EXPECT_FALSE(Schema(OpKind::kReshape).is_differentiable(1));
}

}  // namespace
}  // namespace amptrain::ir
