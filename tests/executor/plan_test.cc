// Memory plan, shape specialization, re-planning and input checks of the
// executor, on small hand-built graphs (Neg/Relu/Abs/Add reference kernels).
#include <gtest/gtest.h>

#include <random>

#include "executor/plan.h"
#include "executor/session.h"
#include "ir/graph.h"

namespace amptrain::executor {
namespace {

using ir::Dim;
using ir::DType;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::TensorType;
using ir::Value;

TensorType BatchBy3() { return TensorType::Of(DType::kFloat32, Shape({Dim::Symbolic("batch"), Dim::Static(3)})); }

Value Unary(Graph& g, OpKind op, Value in, const std::string& name) {
  return g.AddNode(op, {in}, 1, name, {name})->output(0);
}

// x -> Neg a -> Relu b -> Abs c -> Neg y : y = -|relu(-x)|
std::unique_ptr<Graph> Chain() {
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", BatchBy3());
  Value a = Unary(*g, OpKind::kNeg, x, "a");
  Value b = Unary(*g, OpKind::kRelu, a, "b");
  Value c = Unary(*g, OpKind::kAbs, b, "c");
  g->AddOutput(Unary(*g, OpKind::kNeg, c, "y"));
  return g;
}

// x -> Neg a; a -> Relu b; a -> Abs c; d = Add(b, c); y = Neg(Relu(d)), z = c.
//   y = -(relu(-x) + |x|), z = |x|
std::unique_ptr<Graph> Diamond() {
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", BatchBy3());
  Value a = Unary(*g, OpKind::kNeg, x, "a");
  Value b = Unary(*g, OpKind::kRelu, a, "b");
  Value c = Unary(*g, OpKind::kAbs, a, "c");
  Value d = g->AddNode(OpKind::kAdd, {b, c}, 1, "d", {"d"})->output(0);
  Value e = Unary(*g, OpKind::kRelu, d, "e");
  g->AddOutput(Unary(*g, OpKind::kNeg, e, "y"));
  g->AddOutput(c);
  return g;
}

Tensor Input(int64_t batch) {
  std::vector<float> v;
  for (int64_t i = 0; i < batch * 3; ++i) v.push_back(static_cast<float>(i % 5) - 2.5f + 0.25f * static_cast<float>(i));
  return Tensor::Floats(v, {batch, 3});
}

std::map<std::string, TensorType> TypesOf(int64_t batch) {
  return {{"x", TensorType::Of(DType::kFloat32, {batch, 3})}};
}

bool Overlap(int a0, int a1, int b0, int b1) { return a0 <= b1 && b0 <= a1; }

// Every pair of arena values that are live at the same time and do not share
// a buffer (in-place) occupy disjoint bytes; every buffer fits in the arena.
void ExpectNoOverlap(const Plan& plan) {
  std::vector<const Slot*> arena;
  for (const Slot& s : plan.slots)
    if (s.storage == Storage::kArena) arena.push_back(&s);
  for (const Slot* s : arena) {
    ASSERT_GE(s->buffer, 0) << s->name;
    const Buffer& b = plan.buffers[s->buffer];
    EXPECT_GE(b.bytes, s->bytes) << s->name;
    EXPECT_LE(b.offset + b.bytes, plan.peak_bytes) << s->name;
    EXPECT_EQ(b.offset % 64, 0u) << s->name;
    EXPECT_LE(b.first, s->first) << s->name;
    EXPECT_GE(b.last, s->last) << s->name;
  }
  for (size_t i = 0; i < arena.size(); ++i)
    for (size_t j = i + 1; j < arena.size(); ++j) {
      const Slot& p = *arena[i];
      const Slot& q = *arena[j];
      if (p.buffer == q.buffer || !Overlap(p.first, p.last, q.first, q.last)) continue;
      const Buffer& bp = plan.buffers[p.buffer];
      const Buffer& bq = plan.buffers[q.buffer];
      bool disjoint = bp.offset + p.bytes <= bq.offset || bq.offset + q.bytes <= bp.offset;
      EXPECT_TRUE(disjoint) << p.name << " and " << q.name << " are live together and overlap";
    }
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    for (size_t j = i + 1; j < plan.buffers.size(); ++j) {
      const Buffer& p = plan.buffers[i];
      const Buffer& q = plan.buffers[j];
      if (p.bytes == 0 || q.bytes == 0 || !Overlap(p.first, p.last, q.first, q.last)) continue;
      EXPECT_TRUE(p.offset + p.bytes <= q.offset || q.offset + q.bytes <= p.offset) << "buffers " << i << ", " << j;
    }
}

void ExpectFloats(const Tensor& t, const std::vector<float>& want) {
  ASSERT_EQ(t.dtype(), DType::kFloat32);
  ASSERT_EQ(t.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(t.data<float>()[i], want[i]) << "element " << i;
}

TEST(PackBuffers, ReusesMemoryOfDeadBuffers) {
  // A [0,1] and C [2,3] never live together: C reuses A's bytes.
  std::vector<Buffer> buffers = {{0, 128, 0, 1}, {0, 64, 1, 2}, {0, 128, 2, 3}};
  EXPECT_EQ(PackBuffers(buffers), 192u);
  EXPECT_EQ(buffers[0].offset, buffers[2].offset);
  EXPECT_NE(buffers[1].offset, buffers[0].offset);
}

TEST(PackBuffers, RandomIntervalsNeverOverlap) {
  std::mt19937 rng(7);
  for (int round = 0; round < 40; ++round) {
    // Both packers, whichever PackBuffers picks for a plan's size.
    auto pack = round % 2 ? PackBuffersInOrder : PackBuffersBySize;
    std::vector<Buffer> buffers;
    size_t naive = 0;
    for (int i = 0; i < 40; ++i) {
      int first = static_cast<int>(rng() % 30);
      int last = first + static_cast<int>(rng() % 6);
      size_t bytes = 64 * (1 + rng() % 16);
      buffers.push_back({0, bytes, first, last});
      naive += bytes;
    }
    size_t peak = pack(buffers);
    EXPECT_LE(peak, naive);
    for (size_t i = 0; i < buffers.size(); ++i) {
      EXPECT_LE(buffers[i].offset + buffers[i].bytes, peak);
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        const Buffer& p = buffers[i];
        const Buffer& q = buffers[j];
        if (!Overlap(p.first, p.last, q.first, q.last)) continue;
        EXPECT_TRUE(p.offset + p.bytes <= q.offset || q.offset + q.bytes <= p.offset);
      }
    }
  }
}

TEST(PackBuffers, InOrderReusesFreedBlocksAndIsFastOnLongLivedChains) {
  std::vector<Buffer> reuse = {{0, 128, 0, 1}, {0, 64, 1, 2}, {0, 128, 2, 3}};
  EXPECT_EQ(PackBuffersInOrder(reuse), 192u);
  EXPECT_EQ(reuse[0].offset, reuse[2].offset);
  // A training chain: every activation lives until its gradient, near the end
  // (issue 9 F7: 100k nodes took minutes in the quadratic packer).
  const int n = 200000;
  std::vector<Buffer> chain;
  for (int i = 0; i < n; ++i) chain.push_back({0, 64, i, 2 * n - i});
  EXPECT_EQ(PackBuffers(chain), 64u * n);
  for (int i = 1; i < n; ++i) ASSERT_NE(chain[i].offset, chain[i - 1].offset);
}

TEST(Plan, ChainReusesMemory) {
  auto g = Chain();
  for (bool inplace : {false, true}) {
    PlanOptions options;
    options.inplace = inplace;
    auto plan = BuildPlan(*g, TypesOf(4), options);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->steps.size(), 4u);
    EXPECT_EQ(plan->naive_bytes, 3u * 64);  // a, b, c: 48 bytes each, aligned
    EXPECT_LT(plan->peak_bytes, plan->naive_bytes);
    EXPECT_EQ(plan->peak_bytes, inplace ? 64u : 128u);
    EXPECT_EQ(plan->slots[plan->outputs[0]].storage, Storage::kOutput);
    ExpectNoOverlap(*plan);
  }
}

TEST(Plan, DiamondPlanAndOutputs) {
  auto g = Diamond();
  for (bool inplace : {false, true}) {
    PlanOptions options;
    options.inplace = inplace;
    auto plan = BuildPlan(*g, TypesOf(8), options);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->steps.size(), 6u);
    EXPECT_LT(plan->peak_bytes, plan->naive_bytes);
    ExpectNoOverlap(*plan);
    // b and a are live together at step 1..2: they may not share.
    const Slot& a = plan->slots[plan->SlotOf(g->FindValue("a"))];
    const Slot& b = plan->slots[plan->SlotOf(g->FindValue("b"))];
    EXPECT_NE(a.buffer, b.buffer);
    EXPECT_EQ(plan->slots[plan->SlotOf(g->FindValue("c"))].storage, Storage::kOutput);
  }

  auto session = InferenceSession::Create(Diamond());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Tensor x = Input(8);
  auto out = (*session)->Run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);
  std::vector<float> y, z;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    float v = x.data<float>()[i];
    float sum = std::max(-v, 0.0f) + std::abs(v);
    y.push_back(-std::max(sum, 0.0f));
    z.push_back(std::abs(v));
  }
  ExpectFloats((*out)[0], y);
  ExpectFloats((*out)[1], z);
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{8, 3}));
}

// x -> Neg y (a graph output); Flatten(y) -> Relu r; Flatten(x) -> Abs z.
// The Flattens read the memory of y and x (Storage::kAlias), not copies in
// the arena, and every run (new output tensors, a new batch) reads the
// current ones: r = relu(-x), z = |x|.
TEST(Plan, ViewsOfGraphInputsAndOutputsAreNotCopied) {
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", TensorType::Of(DType::kFloat32, Shape({Dim::Symbolic("batch"), Dim::Static(2),
                                                                     Dim::Static(3)})));
  Value y = Unary(*g, OpKind::kNeg, x, "y");
  g->AddOutput(y);
  Value fy = Unary(*g, OpKind::kFlatten, y, "fy");
  g->AddOutput(Unary(*g, OpKind::kRelu, fy, "r"));
  Value fx = Unary(*g, OpKind::kFlatten, x, "fx");
  g->AddOutput(Unary(*g, OpKind::kAbs, fx, "z"));
  for (bool inplace : {false, true}) {
    PlanOptions options;
    options.inplace = inplace;
    auto plan = BuildPlan(*g, {{"x", TensorType::Of(DType::kFloat32, {4, 2, 3})}}, options);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    const Slot& sfy = plan->slots[plan->SlotOf(fy)];
    const Slot& sfx = plan->slots[plan->SlotOf(fx)];
    if (inplace) {
      EXPECT_EQ(sfy.storage, Storage::kAlias);
      EXPECT_EQ(sfy.alias_of, plan->SlotOf(y));
      EXPECT_EQ(sfx.storage, Storage::kAlias);
      EXPECT_EQ(sfx.alias_of, plan->SlotOf(x));
      EXPECT_EQ(plan->peak_bytes, 0u);
    } else {
      EXPECT_EQ(sfy.storage, Storage::kArena);
    }
    ExpectNoOverlap(*plan);
  }
  auto session = InferenceSession::Create(std::move(g));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  for (int64_t batch : {4, 4, 2}) {
    std::vector<float> v;
    for (int64_t i = 0; i < batch * 6; ++i) v.push_back(static_cast<float>(i % 7) - 3.0f + 0.5f * static_cast<float>(batch));
    auto out = (*session)->Run({{"x", Tensor::Floats(v, {batch, 2, 3})}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> neg, relu, abs;
    for (float e : v) neg.push_back(-e), relu.push_back(std::max(-e, 0.0f)), abs.push_back(std::abs(e));
    ExpectFloats((*out)[0], neg);
    ExpectFloats((*out)[1], relu);
    ExpectFloats((*out)[2], abs);
    EXPECT_EQ((*out)[1].dims(), (std::vector<int64_t>{batch, 6}));
  }
}

TEST(Session, ReplansWhenTheBatchChanges) {
  auto session = InferenceSession::Create(Chain());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  EXPECT_EQ((*session)->last_plan(), nullptr);  // symbolic batch: nothing planned yet
  std::map<int64_t, const Plan*> plans;
  for (int64_t batch : {2, 5, 2}) {
    Tensor x = Input(batch);
    auto out = (*session)->Run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (int64_t i = 0; i < x.num_elements(); ++i) want.push_back(-std::max(-x.data<float>()[i], 0.0f));
    ExpectFloats((*out)[0], want);
    const Plan* plan = (*session)->last_plan();
    ASSERT_NE(plan, nullptr);
    EXPECT_EQ(plan->slots[plan->outputs[0]].dims, (std::vector<int64_t>{batch, 3}));
    if (plans.count(batch)) {
      EXPECT_EQ(plans[batch], plan) << "the plan of batch " << batch << " was not reused";
    }
    plans[batch] = plan;
  }
  EXPECT_NE(plans[2], plans[5]);
}

// Plans of several batch sizes share one arena, and ReleaseMemory frees it
// between runs: the runs after a release (or after a larger batch grew the
// arena) compute what they computed before.
TEST(Session, PlansShareOneArenaThatCanBeReleased) {
  auto session = InferenceSession::Create(Diamond());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::map<int64_t, std::vector<Tensor>> first;
  for (int round = 0; round < 2; ++round)
    for (int64_t batch : {4, 9, 1}) {
      auto out = (*session)->Run({{"x", Input(batch)}});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      if (round == 0) {
        first[batch] = *out;
        continue;
      }
      for (size_t o = 0; o < out->size(); ++o)
        ExpectFloats((*out)[o], std::vector<float>(first[batch][o].data<float>(),
                                                   first[batch][o].data<float>() + first[batch][o].num_elements()));
      (*session)->ReleaseMemory();
    }
}

// y = x[x > 0] (GatherND at the transposed NonZero of a mask): the count is
// the data's, so the session counts it before planning and plans once per
// count, by Run and by RunBound alike; a mask that is a graph input works too.
std::unique_ptr<Graph> MaskedSelect() {
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", TensorType::Of(DType::kFloat32, {2, 3}));
  Value m = g->AddInput("m", TensorType::Of(DType::kBool, {2, 3}));
  Value zero = g->AddInitializer("zero", Tensor::Floats({0}, {}));
  Value mask = g->AddNode(OpKind::kGreater, {x, zero}, 1, "mask", {"mask"})->output(0);
  for (auto [name, cond] : {std::pair{"y", mask}, std::pair{"z", m}}) {
    Value nz = g->AddNode(OpKind::kNonZero, {cond}, 1, StrCat(name, "_nz"), {StrCat(name, "_nz")})->output(0);
    Node* t = g->AddNode(OpKind::kTranspose, {nz}, 1, StrCat(name, "_t"), {StrCat(name, "_t")});
    t->attrs().Set("perm", std::vector<int64_t>{1, 0});
    g->AddOutput(g->AddNode(OpKind::kGatherND, {x, t->output(0)}, 1, name, {name})->output(0));
  }
  return g;
}

TEST(Session, PlansForTheCountOfNonZero) {
  auto session = InferenceSession::Create(MaskedSelect());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  EXPECT_EQ((*session)->last_plan(), nullptr);  // static inputs, but the counts are the data's
  auto mask = [](std::vector<uint8_t> v) {
    Tensor t = *Tensor::Zeros(DType::kBool, {2, 3});
    std::copy(v.begin(), v.end(), t.data<uint8_t>());
    return t;
  };
  struct Case { std::vector<float> x; std::vector<uint8_t> m; std::vector<float> y, z; };
  const std::vector<Case> cases = {
      {{1, -2, 3, -4, 5, 0}, {0, 0, 0, 0, 0, 1}, {1, 3, 5}, {0}},
      {{-1, -2, -3, -4, -5, -6}, {1, 1, 0, 0, 1, 1}, {}, {-1, -2, -5, -6}},
      {{7, 8, 9, 1, 2, 3}, {0, 0, 0, 0, 0, 0}, {7, 8, 9, 1, 2, 3}, {}},
      {{2, -2, 4, -4, 6, -6}, {1, 0, 0, 0, 0, 0}, {2, 4, 6}, {2}},  // the first case's counts: its plan again
  };
  std::vector<const Plan*> plans;
  for (const Case& c : cases) {
    auto out = (*session)->Run({{"x", Tensor::Floats(c.x, {2, 3})}, {"m", mask(c.m)}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectFloats((*out)[0], c.y);
    ExpectFloats((*out)[1], c.z);
    plans.push_back((*session)->last_plan());
  }
  EXPECT_EQ(plans[3], plans[0]);
  EXPECT_NE(plans[1], plans[0]);
  // Bound inputs rewritten in place between runs: counted again each run.
  auto bound = InferenceSession::Create(MaskedSelect());
  ASSERT_TRUE(bound.ok());
  Tensor x = *Tensor::Zeros(DType::kFloat32, {2, 3}), m = mask({0, 0, 0, 0, 0, 0});
  ASSERT_TRUE((*bound)->BindInput("x", x).ok());
  ASSERT_TRUE((*bound)->BindInput("m", m).ok());
  for (const Case& c : cases) {
    std::copy(c.x.begin(), c.x.end(), x.data<float>());
    std::copy(c.m.begin(), c.m.end(), m.data<uint8_t>());
    auto out = (*bound)->RunBound();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectFloats((**out)[0], c.y);
    ExpectFloats((**out)[1], c.z);
  }
}

// The count is read on the host: a device without host memory refuses such
// a graph at creation, naming the node, before anything runs.
TEST(Session, NonZeroNeedsHostMemory) {
  SessionOptions o;
  o.device_instance = kernels::StagedCpuDevice();
  auto session = InferenceSession::Create(MaskedSelect(), o);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(session.status().message().find("NonZero node 'y_nz': a shape that depends on the data"), std::string::npos)
      << session.status().message();
}

TEST(Session, FoldsNodesWithKnownValues) {
  // y = Neg(c) is known at plan time; z = Relu(x) runs.
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", TensorType::Of(DType::kFloat32, {1, 3}));
  Value c = g->AddInitializer("c", Tensor::Floats({1, -2, 3}, {3}));
  g->AddOutput(Unary(*g, OpKind::kNeg, c, "y"));
  g->AddOutput(Unary(*g, OpKind::kRelu, x, "z"));
  auto session = InferenceSession::Create(std::move(g));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  ASSERT_NE((*session)->last_plan(), nullptr);  // static inputs: planned in Create
  EXPECT_EQ((*session)->last_plan()->folded_nodes, 1u);
  EXPECT_EQ((*session)->last_plan()->steps.size(), 1u);
  auto out = (*session)->Run({{"x", Tensor::Floats({-1, 0, 2}, {1, 3})}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectFloats((*out)[0], {-1, 2, -3});
  ExpectFloats((*out)[1], {0, 0, 2});
}

TEST(Session, InputOutputPassThrough) {
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", BatchBy3());
  g->AddOutput(x);
  auto session = InferenceSession::Create(std::move(g));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Tensor in = Input(2);
  auto out = (*session)->Run({{"x", in}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE((*out)[0] == in);
  EXPECT_NE((*out)[0].raw(), in.raw());  // copied out, not aliased
}

TEST(Session, InputErrorsNameTheInput) {
  auto session = InferenceSession::Create(Chain());
  ASSERT_TRUE(session.ok());
  auto run = [&](std::map<std::string, Tensor> inputs) { return (*session)->Run(inputs).status(); };

  Status missing = run({});
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("missing input 'x'"), std::string::npos) << missing.message();

  Status extra = run({{"x", Input(2)}, {"w", Input(2)}});
  EXPECT_NE(extra.message().find("unknown input 'w'"), std::string::npos) << extra.message();

  Status dtype = run({{"x", Tensor::Int64s({1, 2, 3}, {1, 3})}});
  EXPECT_NE(dtype.message().find("input 'x' has dtype int64"), std::string::npos) << dtype.message();

  Status dim = run({{"x", Tensor::Floats({1, 2, 3, 4}, {1, 4})}});
  EXPECT_NE(dim.message().find("input 'x' has shape [1,4]"), std::string::npos) << dim.message();
  EXPECT_NE(dim.message().find("[batch,3]"), std::string::npos) << dim.message();

  Status rank = run({{"x", Tensor::Floats({1, 2, 3}, {3})}});
  EXPECT_NE(rank.message().find("rank 1"), std::string::npos) << rank.message();
}

TEST(Plan, ShapeArithmeticIsFoldedPerInputShape) {
  // y = Reshape(Relu(x), Shape(x)): Shape(x) becomes a constant of each plan.
  Graph g;
  Value x = g.AddInput("x", BatchBy3());
  Value shape = g.AddNode(OpKind::kShape, {x}, 1, "shape", {"shape"})->output(0);
  Value r = Unary(g, OpKind::kRelu, x, "r");
  g.AddOutput(g.AddNode(OpKind::kReshape, {r, shape}, 1, "reshape", {"y"})->output(0));
  for (int64_t batch : {1, 4}) {
    auto plan = BuildPlan(g, TypesOf(batch), PlanOptions{});
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->folded_nodes, 1u);
    EXPECT_EQ(plan->steps.size(), 2u);
    const Slot& s = plan->slots[plan->SlotOf(shape)];
    EXPECT_EQ(s.storage, Storage::kConstant);
    EXPECT_EQ(s.constant.ToInt64Vector(), (std::vector<int64_t>{batch, 3}));
  }
}

TEST(Plan, ValueWithoutStaticShapeNamesNodeAndValue) {
  // The target shape is only known at run time: no static plan exists.
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {6}));
  Value s = g.AddInput("s", TensorType::Of(DType::kInt64, {2}));
  g.AddOutput(g.AddNode(OpKind::kReshape, {x, s}, 1, "reshape", {"y"})->output(0));
  std::map<std::string, TensorType> types = {{"x", TensorType::Of(DType::kFloat32, {6})},
                                             {"s", TensorType::Of(DType::kInt64, {2})}};
  auto plan = BuildPlan(g, types, PlanOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("Reshape node 'reshape': output 'y' has no static shape"), std::string::npos)
      << plan.status().message();
}

TEST(Plan, UnknownKernelImplementationNamesTheNode) {
  auto g = Chain();
  PlanOptions options;
  options.kernel_impl = "no-such-impl";
  auto plan = BuildPlan(*g, TypesOf(1), options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(plan.status().message().find("Neg node 'a'"), std::string::npos) << plan.status().message();
}

// A CUDA training session fails cleanly: built without CUDA
// (Unimplemented), no GPU (FailedPrecondition: "no CUDA device"), or a GPU,
// where the session runs inference only so far (Unimplemented).
TEST(Session, RejectsCudaTrainingSessions) {
  SessionOptions opts;
  opts.device = kernels::DeviceKind::kCuda;
  opts.training = true;
  auto session = InferenceSession::Create(Chain(), opts);
  ASSERT_FALSE(session.ok());
  EXPECT_TRUE(session.status().code() == StatusCode::kUnimplemented ||
              session.status().code() == StatusCode::kFailedPrecondition)
      << session.status().message();
  const std::string& m = session.status().message();
  EXPECT_TRUE(m.find("cuda") != std::string::npos || m.find("CUDA") != std::string::npos) << m;
}

// A ConvGrad whose dX nothing reads (the first convolution's, whose input is
// data) gets no dX: the slot is absent, so neither the kernel nor the arena
// spends anything on it, and dW is the same as when dX is computed.
TEST(Plan, AnUnreadConvGradDxIsNotComputed) {
  auto build = [](bool read_dx) {
    auto g = std::make_unique<Graph>();
    Value dy = g->AddInput("dy", TensorType::Of(DType::kFloat32, {2, 4, 6, 6}));
    Value x = g->AddInput("x", TensorType::Of(DType::kFloat32, {2, 3, 8, 8}));
    Value w = g->AddInput("w", TensorType::Of(DType::kFloat32, {4, 3, 3, 3}));
    Node* grad = g->AddNode(OpKind::kConvGrad, {dy, x, w}, 2, "grad", {"dx", "dw"});
    if (read_dx) g->AddOutput(grad->output(0));
    g->AddOutput(grad->output(1));
    EXPECT_TRUE(g->InferShapes().ok());
    return g;
  };
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  auto random = [&](std::vector<int64_t> dims) {
    Tensor t = *Tensor::Zeros(DType::kFloat32, dims);
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = normal(rng);
    return t;
  };
  const std::map<std::string, Tensor> in = {
      {"dy", random({2, 4, 6, 6})}, {"x", random({2, 3, 8, 8})}, {"w", random({4, 3, 3, 3})}};
  for (const char* impl : {"", "reference"}) {
    SCOPED_TRACE(*impl ? impl : "best");
    PlanOptions options;
    options.kernel_impl = impl;
    std::unique_ptr<Graph> unread = build(false), read = build(true);
    std::map<std::string, TensorType> types;
    for (const auto& [name, t] : in) types[name] = TensorType::Of(t.dtype(), t.dims());
    auto plan = BuildPlan(*unread, types, options);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_EQ(plan->steps.size(), 1u);
    EXPECT_EQ(plan->slots[plan->steps[0].outputs[0]].storage, Storage::kAbsent);
    SessionOptions so;
    so.kernel_impl = impl;
    auto a = InferenceSession::Create(std::move(unread), so);
    auto b = InferenceSession::Create(std::move(read), so);
    ASSERT_TRUE(a.ok() && b.ok());
    auto dw_only = (*a)->Run(in);
    auto both = (*b)->Run(in);
    ASSERT_TRUE(dw_only.ok()) << dw_only.status().ToString();
    ASSERT_TRUE(both.ok()) << both.status().ToString();
    EXPECT_TRUE((*dw_only)[0] == (*both)[1]) << "dW differs when dX is skipped";
  }
}

}  // namespace
}  // namespace amptrain::executor
