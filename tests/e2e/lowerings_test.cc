// The ops the importer lowers into others (importer/lowerings.cc), run
// end to end: Einsum against loops written here, on equations PyTorch code
// writes (attention with the heads inside, implicit output, ellipsis, a label
// summed away in one input, a symbolic batch, diagonals) and against its definition
// (RefEinsum), the forms it refuses (errors naming the node and equation),
// DepthToSpace / SpaceToDepth and InstanceNormalization (3-D, 4-D, nn.GroupNorm's
// export, written back below opset 17) against their ONNX formulas, and the exporter's unique node names,
// which two lowered Einsums would otherwise repeat (ONNX Runtime refuses such
// a model).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "executor/session.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "tests/importer/model_builder.h"

namespace amptrain {
namespace {

namespace mb = importer::testing;

ir::Tensor Iota(const std::vector<int64_t>& dims, float scale) {
  ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kFloat32, dims);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = std::sin(scale * static_cast<float>(i + 1));
  return t;
}

// Runs Einsum(equation) on a and b (b absent when its dims are empty).
ir::Tensor RunEinsum(const std::string& equation, const ir::Tensor& a, const ir::Tensor* b) {
  onnx::ModelProto m = mb::NewModel(17);
  mb::AddInput(m, "a", a.dims());
  std::vector<std::string> ins = {"a"};
  if (b) {
    mb::AddInput(m, "b", b->dims());
    ins.push_back("b");
  }
  auto* n = mb::AddNode(m, "Einsum", ins, {"y"}, "einsum");
  mb::SetString(n, "equation", equation);
  mb::AddOutput(m, "y");
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return {};
  for (const ir::Node* node : (*g)->nodes()) EXPECT_NE(node->op(), ir::OpKind::kEinsum);
  auto s = executor::InferenceSession::Create(std::move(*g));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  std::map<std::string, ir::Tensor> feeds = {{"a", a}};
  if (b) feeds["b"] = *b;
  auto out = (*s)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? (*out)[0] : ir::Tensor();
}

void ExpectNear(const ir::Tensor& got, const std::vector<int64_t>& dims, const std::vector<double>& want) {
  ASSERT_EQ(got.dims(), dims);
  ASSERT_EQ(static_cast<size_t>(got.num_elements()), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.GetAsDouble(static_cast<int64_t>(i)), want[i], 1e-5) << i;
}

TEST(LoweredEinsum, AttentionScoresWithHeadsInside) {  // bqhd,bkhd->bhqk
  const int64_t B = 2, Q = 3, K = 4, H = 2, D = 5;
  ir::Tensor q = Iota({B, Q, H, D}, 0.3f), k = Iota({B, K, H, D}, 0.7f);
  std::vector<double> want;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Q; ++i)
        for (int64_t j = 0; j < K; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += static_cast<double>(q.data<float>()[((b * Q + i) * H + h) * D + d]) * k.data<float>()[((b * K + j) * H + h) * D + d];
          want.push_back(s);
        }
  ExpectNear(RunEinsum("bqhd,bkhd->bhqk", q, &k), {B, H, Q, K}, want);
}

TEST(LoweredEinsum, ImplicitOutputEllipsisAndSummedLabels) {
  ir::Tensor a = Iota({2, 3}, 0.5f), b = Iota({3, 4}, 0.9f);
  std::vector<double> mm;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += static_cast<double>(a.data<float>()[i * 3 + k]) * b.data<float>()[k * 4 + j];
      mm.push_back(s);
    }
  ExpectNear(RunEinsum("ij,jk", a, &b), {2, 4}, mm);              // implicit "->ik"
  ExpectNear(RunEinsum("...ij,...jk->...ik", a, &b), {2, 4}, mm);  // empty ellipsis
  // "ij->i" (one input), "ij,jk->i" (k summed in b first, j contracted).
  std::vector<double> rows, ij_jk_i;
  for (int i = 0; i < 2; ++i) {
    double r = 0, s = 0;
    for (int j = 0; j < 3; ++j) r += a.data<float>()[i * 3 + j];
    for (int j = 0; j < 4; ++j) s += mm[static_cast<size_t>(i * 4 + j)];
    rows.push_back(r);
    ij_jk_i.push_back(s);
  }
  ExpectNear(RunEinsum("ij->i", a, nullptr), {2}, rows);
  ExpectNear(RunEinsum("ij,jk->i", a, &b), {2}, ij_jk_i);
  // "ij->ji" and "i,i->" (a scalar).
  ir::Tensor v = Iota({3}, 0.2f), w = Iota({3}, 0.4f);
  double dot = 0;
  for (int i = 0; i < 3; ++i) dot += static_cast<double>(v.data<float>()[i]) * w.data<float>()[i];
  ExpectNear(RunEinsum("i,i->", v, &w), {}, {dot});
  std::vector<double> t;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 2; ++i) t.push_back(a.data<float>()[i * 3 + j]);
  ExpectNear(RunEinsum("ij->ji", a, nullptr), {3, 2}, t);
}

TEST(LoweredEinsum, ExportWritesUniqueNodeNames) {
  onnx::ModelProto m = mb::NewModel(17);
  mb::AddInput(m, "a", {2, 3});
  mb::AddInput(m, "b", {3, 4});
  for (const char* y : {"y1", "y2"}) {
    auto* n = mb::AddNode(m, "Einsum", {"a", "b"}, {y}, "same_name");
    mb::SetString(n, "equation", "ij,jk->ki");
    mb::AddOutput(m, y);
  }
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto bytes = importer::ExportModelBytes(**g, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(*bytes));
  std::set<std::string> names;
  for (const auto& n : out.graph().node()) {
    if (!n.name().empty()) {
      EXPECT_TRUE(names.insert(n.name()).second) << "repeated node name " << n.name();
    }
  }
}

// InstanceNormalization with symbolic spatial dims: LayerNormalization's ones
// come from ConstantOfShape at run time; per-(n, c) statistics as ONNX's.
TEST(LoweredInstanceNorm, SymbolicSpatialDims) {
  onnx::ModelProto m = mb::NewModel(17);
  auto* x = mb::AddInput(m, "x", {2, 3, 5, 7});
  for (int d : {2, 3}) x->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(d)->set_dim_param(d == 2 ? "h" : "w");
  const std::vector<float> scale = {1.5f, 0.5f, -1.0f}, bias = {0.1f, 0.2f, 0.3f};
  mb::FillFloats(m.mutable_graph()->add_initializer(), "s", {3}, scale);
  mb::FillFloats(m.mutable_graph()->add_initializer(), "b", {3}, bias);
  mb::SetFloat(mb::AddNode(m, "InstanceNormalization", {"x", "s", "b"}, {"y"}, "in"), "epsilon", 1e-5f);
  mb::AddOutput(m, "y");
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto s = executor::InferenceSession::Create(std::move(*g));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ir::Tensor in = Iota({2, 3, 5, 7}, 0.37f);
  auto out = (*s)->Run({{"x", in}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<double> want;
  for (int nc = 0; nc < 6; ++nc) {
    const float* p = in.data<float>() + nc * 35;
    double mean = 0, var = 0;
    for (int i = 0; i < 35; ++i) mean += p[i] / 35.0;
    for (int i = 0; i < 35; ++i) var += (p[i] - mean) * (p[i] - mean) / 35.0;
    for (int i = 0; i < 35; ++i) want.push_back((p[i] - mean) / std::sqrt(var + 1e-5) * scale[nc % 3] + bias[nc % 3]);
  }
  ExpectNear((*out)[0], {2, 3, 5, 7}, want);
}

// ---- Einsum by definition, DepthToSpace / SpaceToDepth / InstanceNorm by
// their ONNX formulas, all as plain loops (no reshape/transpose to share a
// mistake with the lowering) ----

// Einsum of an explicit, letters-only equation ("ab,bc->ac"): over every
// assignment of the labels, the output element gets the product of the
// inputs' elements there.
std::vector<double> RefEinsum(const std::string& equation, const std::vector<const ir::Tensor*>& ins,
                              std::vector<int64_t>* out_dims) {
  const size_t arrow = equation.find("->");
  std::vector<std::string> terms(1);
  for (char c : equation.substr(0, arrow)) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  const std::string out = equation.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = ins[i]->dims()[d];
  std::string labels;
  for (const auto& [c, n] : size) labels += c;
  out_dims->clear();
  int64_t out_count = 1;
  for (char c : out) {
    out_dims->push_back(size[c]);
    out_count *= size[c];
  }
  std::vector<double> y(static_cast<size_t>(out_count), 0.0);
  std::map<char, int64_t> at;
  for (char c : labels) at[c] = 0;
  auto flat = [&](const std::string& term, const std::vector<int64_t>& dims) {
    int64_t f = 0;
    for (size_t d = 0; d < term.size(); ++d) f = f * dims[d] + at[term[d]];
    return f;
  };
  for (;;) {
    double p = 1;
    for (size_t i = 0; i < terms.size(); ++i) p *= ins[i]->data<float>()[flat(terms[i], ins[i]->dims())];
    y[static_cast<size_t>(flat(out, *out_dims))] += p;
    size_t k = labels.size();
    while (k > 0 && ++at[labels[k - 1]] == size[labels[k - 1]]) at[labels[--k]] = 0;
    if (k == 0) break;
  }
  return y;
}

struct EinsumCase {
  std::string equation, reference;  // reference: the same, explicit and letters only
  std::vector<int64_t> a, b;         // b empty: one input
  bool symbolic_batch = false;       // dim 0 of every input declared "N"
  std::vector<std::vector<int64_t>> more = {};  // inputs after b
};

onnx::NodeProto* AddEinsum(onnx::ModelProto& m, const std::vector<std::string>& ins, const std::string& equation) {
  auto* n = mb::AddNode(m, "Einsum", ins, {"y"}, "my_einsum");
  mb::SetString(n, "equation", equation);
  mb::AddOutput(m, "y");
  return n;
}

TEST(LoweredEinsum, EquationsAgainstTheDefinition) {
  const std::vector<EinsumCase> cases = {
      {"bij,bjk->bik", "bij,bjk->bik", {2, 3, 4}, {2, 4, 5}},
      {"bij,bjk->bik", "bij,bjk->bik", {2, 3, 4}, {2, 4, 5}, true},
      {"bhqd,bkhd->bhqk", "bhqd,bkhd->bhqk", {2, 2, 3, 4}, {2, 5, 2, 4}},
      {"bhqd,bkhd->bhqk", "bhqd,bkhd->bhqk", {3, 2, 3, 4}, {3, 5, 2, 4}, true},
      {"bn,nd->bd", "bn,nd->bd", {3, 4}, {4, 5}},
      {"ij,jk", "ij,jk->ik", {2, 3}, {3, 4}},
      {"ij,jk->ki", "ij,jk->ki", {2, 3}, {3, 4}},
      {"...ij,...jk->...ik", "xij,xjk->xik", {2, 3, 4}, {2, 4, 5}},
      {"...ij,...jk->...ik", "xyij,xyjk->xyik", {2, 2, 3, 4}, {2, 2, 4, 5}},
      {"...ij,...jk->...ik", "xij,jk->xik", {2, 3, 4}, {4, 5}},
      {"...ij,...jk", "xij,xjk->xik", {2, 3, 4}, {2, 4, 5}},
      {"ij,jk->i", "ij,jk->i", {2, 3}, {3, 4}},
      {"i,i->", "i,i->", {5}, {5}},
      {"i,j->ij", "i,j->ij", {3}, {4}},
      {"ij,ij->ij", "ij,ij->ij", {2, 3}, {2, 3}},
      {"b i j , b j k -> b k i", "bij,bjk->bki", {2, 3, 4}, {2, 4, 5}},
      {"ij->ji", "ij->ji", {2, 3}, {}},
      {"ij->i", "ij->i", {2, 3}, {}},
      {"ij->", "ij->", {2, 3}, {}},
      {"bij->bji", "bij->bji", {2, 3, 4}, {}, true},
      {"ijk", "ijk->ijk", {2, 3, 4}, {}},
      {"kji", "kji->ijk", {2, 3, 4}, {}},
      {"...ij->...ji", "xij->xji", {2, 3, 4}, {}},
      // Three and four inputs, contracted pairwise from the left: a bilinear
      // form, a chain, a trace of a product (i and k skip the middle pair),
      // an outer product, a label summed in the first and last only.
      {"bi,kij,bj->bk", "bi,kij,bj->bk", {2, 3}, {5, 3, 4}, false, {{2, 4}}},
      {"bi,bij,bj->b", "bi,bij,bj->b", {2, 3}, {2, 3, 4}, true, {{2, 4}}},
      {"ab,bc,cd,de->ae", "ab,bc,cd,de->ae", {2, 3}, {3, 4}, false, {{4, 2}, {2, 5}}},
      {"ij,jk,ki->", "ij,jk,ki->", {3, 4}, {4, 2}, false, {{2, 3}}},
      {"i,i,i->", "i,i,i->", {5}, {5}, false, {{5}}},
      {"bi,bj,bk->bijk", "bi,bj,bk->bijk", {2, 2}, {2, 3}, true, {{2, 4}}},
      {"xa,yb,xc->bc", "xa,yb,xc->bc", {2, 3}, {4, 2}, false, {{2, 3}}},
      // Diagonals (a label repeated within an input): adjacent, apart, three
      // times, a trace, beside a contraction, with a symbolic batch.
      {"bii->bi", "bii->bi", {2, 3, 3}, {}},
      {"bii->bi", "bii->bi", {2, 3, 3}, {}, true},
      {"ii->", "ii->", {4, 4}, {}},
      {"iji->j", "iji->j", {3, 2, 3}, {}},
      {"iii->i", "iii->i", {3, 3, 3}, {}},
      {"bii,bj->bij", "bii,bj->bij", {2, 3, 3}, {2, 4}},
      {"bij,bjj->bi", "bij,bjj->bi", {2, 3, 4}, {2, 4, 4}, true},
  };
  for (const EinsumCase& c : cases) {
    SCOPED_TRACE(c.equation + (c.symbolic_batch ? " (symbolic batch)" : ""));
    onnx::ModelProto m = mb::NewModel(17);
    const ir::Tensor a = Iota(c.a, 0.31f), b = Iota(c.b.empty() ? std::vector<int64_t>{1} : c.b, 0.77f);
    auto declared = [&](std::vector<int64_t> d) {
      if (c.symbolic_batch) d[0] = -1;
      return d;
    };
    mb::AddInput(m, "a", declared(c.a));
    std::vector<std::string> names = {"a"};
    std::map<std::string, ir::Tensor> feeds = {{"a", a}};
    std::vector<const ir::Tensor*> ref_ins = {&a};
    if (!c.b.empty()) {
      mb::AddInput(m, "b", declared(c.b));
      names.push_back("b");
      feeds["b"] = b;
      ref_ins.push_back(&b);
    }
    std::vector<ir::Tensor> more;
    for (const std::vector<int64_t>& dims : c.more) more.push_back(Iota(dims, 0.53f + 0.1f * static_cast<float>(more.size())));
    for (size_t i = 0; i < more.size(); ++i) {
      names.push_back("m" + std::to_string(i));
      mb::AddInput(m, names.back(), declared(c.more[i]));
      feeds[names.back()] = more[i];
      ref_ins.push_back(&more[i]);
    }
    AddEinsum(m, names, c.equation);
    auto g = importer::ImportModelBytes(mb::Bytes(m), "");
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    for (const ir::Node* node : (*g)->nodes()) EXPECT_NE(node->op(), ir::OpKind::kEinsum);
    auto s = executor::InferenceSession::Create(std::move(*g));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto out = (*s)->Run(feeds);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<int64_t> dims;
    const std::vector<double> want = RefEinsum(c.reference, ref_ins, &dims);
    ExpectNear((*out)[0], dims, want);
  }
}

// What the lowering does not do is an import error naming the node and the equation.
TEST(LoweredEinsum, UnsupportedFormsAreCleanErrors) {
  struct Bad {
    std::string equation;
    std::vector<std::vector<int64_t>> inputs;
    StatusCode code;
    std::string says;
  };
  const std::vector<Bad> cases = {
      {"bii->bi", {{2, -1, -1}}, StatusCode::kUnimplemented, "diagonal over the symbolic label 'i'"},
      {"ij,jk->ik", {{2, -1}, {-1, 4}}, StatusCode::kUnimplemented, "symbolic"},
      {"ij,jk->ik", {{2, 3}, {3, 4, 5}}, StatusCode::kInvalidArgument, "rank"},
      {"ij,jk->iz", {{2, 3}, {3, 4}}, StatusCode::kInvalidArgument, "in no input"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.equation);
    onnx::ModelProto m = mb::NewModel(17);
    std::vector<std::string> names;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      names.push_back(std::string(1, static_cast<char>('a' + i)));
      mb::AddInput(m, names.back(), c.inputs[i]);
    }
    AddEinsum(m, names, c.equation);
    auto g = importer::ImportModelBytes(mb::Bytes(m), "");
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), c.code) << g.status().ToString();
    EXPECT_NE(g.status().message().find("my_einsum"), std::string::npos) << g.status().ToString();
    EXPECT_NE(g.status().message().find(c.equation), std::string::npos) << g.status().ToString();
    EXPECT_NE(g.status().message().find(c.says), std::string::npos) << g.status().ToString();
  }
}

// Imports a one-node model y = op(x) with x [N?, C, H, W] and runs it on `x`.
ir::Tensor RunBlockOp(const std::string& op, const ir::Tensor& x, int64_t b, const std::string& mode, bool symbolic_batch) {
  onnx::ModelProto m = mb::NewModel(17);
  std::vector<int64_t> dims = x.dims();
  if (symbolic_batch) dims[0] = -1;
  mb::AddInput(m, "x", dims);
  auto* n = mb::AddNode(m, op, {"x"}, {"y"}, "block_op");
  mb::SetInt(n, "blocksize", b);
  if (!mode.empty()) {
    mb::SetString(n, "mode", mode);
  }
  mb::AddOutput(m, "y");
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return {};
  for (const ir::Node* node : (*g)->nodes()) {
    EXPECT_NE(node->op(), ir::OpKind::kDepthToSpace);
    EXPECT_NE(node->op(), ir::OpKind::kSpaceToDepth);
  }
  auto s = executor::InferenceSession::Create(std::move(*g));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  auto out = (*s)->Run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? (*out)[0] : ir::Tensor();
}

// DepthToSpace: y[n, c, h b + i, w b + j] = x[n, (i b + j) C' + c, h, w] (DCR)
// or x[n, c b^2 + i b + j, h, w] (CRD), C' = C / b^2. SpaceToDepth (DCR) is
// its inverse: y[n, (i b + j) C + c, h, w] = x[n, c, h b + i, w b + j].
TEST(LoweredBlockRearrange, DepthToSpaceAndSpaceToDepthByTheirFormulas) {
  const int64_t N = 2, b = 2, C2 = 3, H = 2, W = 3, C = C2 * b * b;
  const ir::Tensor x = Iota({N, C, H, W}, 0.13f);
  for (const std::string mode : {"DCR", "CRD"})
    for (bool symbolic : {false, true}) {
      SCOPED_TRACE(mode + (symbolic ? " symbolic batch" : ""));
      std::vector<double> want(static_cast<size_t>(x.num_elements()));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C2; ++c)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < b; ++i)
              for (int64_t w = 0; w < W; ++w)
                for (int64_t j = 0; j < b; ++j) {
                  const int64_t src_c = mode == "DCR" ? (i * b + j) * C2 + c : c * b * b + i * b + j;
                  const int64_t dst = ((n * C2 + c) * H * b + h * b + i) * W * b + w * b + j;
                  want[static_cast<size_t>(dst)] = x.data<float>()[((n * C + src_c) * H + h) * W + w];
                }
      ExpectNear(RunBlockOp("DepthToSpace", x, b, mode, symbolic), {N, C2, H * b, W * b}, want);
    }
  const int64_t Cs = 3, Hs = 4, Ws = 6;
  const ir::Tensor xs = Iota({N, Cs, Hs, Ws}, 0.29f);
  std::vector<double> want(static_cast<size_t>(xs.num_elements()));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < Cs; ++c)
      for (int64_t h = 0; h < Hs / b; ++h)
        for (int64_t i = 0; i < b; ++i)
          for (int64_t w = 0; w < Ws / b; ++w)
            for (int64_t j = 0; j < b; ++j) {
              const int64_t dst = ((n * Cs * b * b + (i * b + j) * Cs + c) * (Hs / b) + h) * (Ws / b) + w;
              want[static_cast<size_t>(dst)] = xs.data<float>()[((n * Cs + c) * Hs + h * b + i) * Ws + w * b + j];
            }
  for (bool symbolic : {false, true})
    ExpectNear(RunBlockOp("SpaceToDepth", xs, b, "", symbolic), {N, Cs * b * b, Hs / b, Ws / b}, want);
}

// (x - mean) / sqrt(var + eps) per (n, c) over the trailing `inner` elements,
// then * scale[c] + bias[c] (biased variance, as ONNX's reference).
std::vector<double> RefInstanceNorm(const ir::Tensor& x, int64_t C, const std::vector<float>& scale,
                                    const std::vector<float>& bias, double eps) {
  const int64_t inner = x.num_elements() / (x.dims()[0] * C);
  std::vector<double> y;
  for (int64_t nc = 0; nc < x.dims()[0] * C; ++nc) {
    const float* p = x.data<float>() + nc * inner;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) mean += p[i];
    mean /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) var += (p[i] - mean) * (p[i] - mean);
    var /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i)
      y.push_back((p[i] - mean) / std::sqrt(var + eps) * scale[nc % C] + bias[nc % C]);
  }
  return y;
}

ir::Tensor RunModel(const onnx::ModelProto& m, const std::map<std::string, ir::Tensor>& feeds,
                    ir::OpKind gone = ir::OpKind::kInstanceNormalization) {
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return {};
  for (const ir::Node* node : (*g)->nodes()) EXPECT_NE(node->op(), gone);
  auto s = executor::InferenceSession::Create(std::move(*g));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  auto out = (*s)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? (*out)[0] : ir::Tensor();
}

TEST(LoweredInstanceNorm, ThreeAndFourDimsAgainstPerChannelStatistics) {
  const std::vector<float> scale = {1.5f, -0.5f, 2.0f}, bias = {0.1f, -0.2f, 0.3f};
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 3, 7}, std::vector<int64_t>{2, 3, 4, 5}}) {
    SCOPED_TRACE(dims.size());
    for (bool symbolic_batch : {false, true}) {
      onnx::ModelProto m = mb::NewModel(17);
      std::vector<int64_t> declared = dims;
      if (symbolic_batch) declared[0] = -1;
      mb::AddInput(m, "x", declared);
      mb::FillFloats(m.mutable_graph()->add_initializer(), "s", {3}, scale);
      mb::FillFloats(m.mutable_graph()->add_initializer(), "b", {3}, bias);
      mb::SetFloat(mb::AddNode(m, "InstanceNormalization", {"x", "s", "b"}, {"y"}, "inorm"), "epsilon", 1e-3f);
      mb::AddOutput(m, "y");
      const ir::Tensor x = Iota(dims, 0.41f);
      ExpectNear(RunModel(m, {{"x", x}}), dims, RefInstanceNorm(x, 3, scale, bias, 1e-3));
    }
  }
}

// A model below opset 17 with InstanceNormalization exports at its own
// opset: the LayerNormalization it became is written as ReduceMean / Sub /
// Mul / Add / Sqrt / Div (importer/opset_adapters.h), which re-imports to
// the same values.
TEST(LoweredInstanceNorm, ExportsBelowOpset17) {
  const std::vector<float> scale = {1.5f, -0.5f, 2.0f}, bias = {0.1f, -0.2f, 0.3f};
  onnx::ModelProto m = mb::NewModel(13);
  mb::AddInput(m, "x", {-1, 3, 4, 5});
  mb::FillFloats(m.mutable_graph()->add_initializer(), "s", {3}, scale);
  mb::FillFloats(m.mutable_graph()->add_initializer(), "b", {3}, bias);
  mb::SetFloat(mb::AddNode(m, "InstanceNormalization", {"x", "s", "b"}, {"y"}, "inorm"), "epsilon", 1e-3f);
  mb::AddOutput(m, "y");
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto bytes = importer::ExportModelBytes(**g, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(*bytes));
  EXPECT_EQ(out.opset_import(0).version(), 13);
  for (const auto& n : out.graph().node()) EXPECT_NE(n.op_type(), "LayerNormalization");
  const ir::Tensor x = Iota({2, 3, 4, 5}, 0.41f);
  ExpectNear(RunModel(out, {{"x", x}}), {2, 3, 4, 5}, RefInstanceNorm(x, 3, scale, bias, 1e-3));
}

// nn.GroupNorm(G, C) as both PyTorch exporters write it: Reshape(x, [N, G, -1])
// -> InstanceNormalization(Constant ones[G], Constant zeros[G]) -> Reshape back
// -> Mul(gamma [C, 1, 1]) -> Add(beta [C, 1, 1]).
TEST(LoweredInstanceNorm, GroupNormPattern) {
  const int64_t N = 2, C = 4, G = 2, H = 3, W = 5;
  onnx::ModelProto m = mb::NewModel(17);
  mb::AddInput(m, "x", {-1, C, H, W});
  auto constant = [&](const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto* a = mb::AddNode(m, "Constant", {}, {name})->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    mb::FillFloats(a->mutable_t(), "", dims, v);
  };
  auto ints = [&](const std::string& name, const std::vector<int64_t>& v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t e : v) t->add_int64_data(e);
  };
  constant("ones", {G}, std::vector<float>(G, 1.0f));
  constant("zeros", {G}, std::vector<float>(G, 0.0f));
  const std::vector<float> gamma = {1.5f, 0.5f, -1.0f, 2.0f}, beta = {0.1f, 0.2f, 0.3f, -0.4f};
  mb::FillFloats(m.mutable_graph()->add_initializer(), "gamma", {C, 1, 1}, gamma);
  mb::FillFloats(m.mutable_graph()->add_initializer(), "beta", {C, 1, 1}, beta);
  ints("grouped", {0, G, -1});
  mb::AddNode(m, "Shape", {"x"}, {"x_shape"});
  mb::AddNode(m, "Reshape", {"x", "grouped"}, {"xg"});
  mb::SetFloat(mb::AddNode(m, "InstanceNormalization", {"xg", "ones", "zeros"}, {"ng"}, "group_norm"), "epsilon", 1e-5f);
  mb::AddNode(m, "Reshape", {"ng", "x_shape"}, {"n"});
  mb::AddNode(m, "Mul", {"n", "gamma"}, {"scaled"});
  mb::AddNode(m, "Add", {"scaled", "beta"}, {"y"});
  mb::AddOutput(m, "y");
  const ir::Tensor x = Iota({N, C, H, W}, 0.23f);
  // Group statistics (G groups of C / G channels), then the per-channel affine.
  auto grouped = x.Reshaped({N, G, C / G * H * W});
  ASSERT_TRUE(grouped.ok());
  std::vector<double> want = RefInstanceNorm(*grouped, G, std::vector<float>(G, 1.0f), std::vector<float>(G, 0.0f), 1e-5);
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t c = (i / (H * W)) % C;
    want[i] = want[i] * gamma[c] + beta[c];
  }
  ExpectNear(RunModel(m, {{"x", x}}), {N, C, H, W}, want);
}

// ---- Attention (opset 23), as PyTorch's exporter writes
// scaled_dot_product_attention: symbolic batch and sequence (one session runs
// two lengths), causal with grouped-query heads, and a boolean padding mask
// that leaves a query row no key (its output is 0, as the spec says).

// softmax(q k^T / sqrt(D) + bias) v, per (b, h); kv head h / (Hq / Hkv);
// allowed(b, i, j) false masks a key; a row with no key gives 0.
std::vector<double> RefAttention(const ir::Tensor& q, const ir::Tensor& k, const ir::Tensor& v,
                                 const std::function<bool(int64_t, int64_t, int64_t)>& allowed) {
  const int64_t B = q.dims()[0], Hq = q.dims()[1], S = q.dims()[2], D = q.dims()[3];
  const int64_t Hkv = k.dims()[1], T = k.dims()[2], Dv = v.dims()[3];
  std::vector<double> y;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t hk = h / (Hq / Hkv);
        std::vector<double> w(T, 0.0);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          if (!allowed(b, i, j)) continue;
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += q.GetAsDouble(((b * Hq + h) * S + i) * D + d) * k.GetAsDouble(((b * Hkv + hk) * T + j) * D + d);
          w[j] = dot / std::sqrt(static_cast<double>(D));
          mx = std::max(mx, w[j]);
        }
        for (int64_t j = 0; j < T; ++j) sum += allowed(b, i, j) ? std::exp(w[j] - mx) : 0.0;
        for (int64_t e = 0; e < Dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j)
            if (allowed(b, i, j)) acc += std::exp(w[j] - mx) / sum * v.GetAsDouble(((b * Hkv + hk) * T + j) * Dv + e);
          y.push_back(acc);
        }
      }
  return y;
}

TEST(LoweredAttention, CausalGroupedQuerySymbolicBatchAndSequence) {
  onnx::ModelProto m = mb::NewModel(23, 10);
  mb::AddInput(m, "q", {-1, 4, -1, 8});
  mb::AddInput(m, "k", {-1, 2, -1, 8});
  mb::AddInput(m, "v", {-1, 2, -1, 3});
  mb::SetInt(mb::AddNode(m, "Attention", {"q", "k", "v"}, {"y"}, "sdpa"), "is_causal", 1);
  mb::AddOutput(m, "y");
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const ir::Node* node : (*g)->nodes()) EXPECT_NE(node->op(), ir::OpKind::kAttention);
  auto s = executor::InferenceSession::Create(std::move(*g));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (int64_t seq : {3, 6}) {
    SCOPED_TRACE(seq);
    ir::Tensor q = Iota({2, 4, seq, 8}, 0.31f), k = Iota({2, 2, seq, 8}, 0.53f), v = Iota({2, 2, seq, 3}, 0.71f);
    auto out = (*s)->Run({{"q", q}, {"k", k}, {"v", v}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear((*out)[0], {2, 4, seq, 3}, RefAttention(q, k, v, [](int64_t, int64_t i, int64_t j) { return j <= i; }));
  }
}

TEST(LoweredAttention, BoolPaddingMaskWithAnEmptyRowGivesZeros) {
  const int64_t B = 2, H = 2, S = 4, D = 4;
  onnx::ModelProto m = mb::NewModel(23, 10);
  mb::AddInput(m, "q", {B, H, S, D});
  mb::AddInput(m, "k", {B, H, S, D});
  mb::AddInput(m, "v", {B, H, S, D});
  mb::AddInput(m, "mask", {B, 1, S, S}, onnx::TensorProto::BOOL);
  mb::AddNode(m, "Attention", {"q", "k", "v", "mask"}, {"y"}, "sdpa");
  mb::AddOutput(m, "y");
  // Batch 0: the last key is padding; batch 1: query 2 sees no key at all.
  auto allowed = [](int64_t b, int64_t i, int64_t j) { return b == 0 ? j < 3 : i != 2; };
  ir::Tensor mask = *ir::Tensor::Zeros(ir::DType::kBool, {B, 1, S, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S; ++j) mask.data<uint8_t>()[(b * S + i) * S + j] = allowed(b, i, j);
  ir::Tensor q = Iota({B, H, S, D}, 0.29f), k = Iota({B, H, S, D}, 0.61f), v = Iota({B, H, S, D}, 0.83f);
  ir::Tensor y = RunModel(m, {{"q", q}, {"k", k}, {"v", v}, {"mask", mask}}, ir::OpKind::kAttention);
  ExpectNear(y, {B, H, S, D}, RefAttention(q, k, v, allowed));
}

// EyeLike over an input whose dims are known only at run time (torch.eye(n)
// with n from a tensor's shape), off the main diagonal and into int64.
TEST(LoweredEyeLike, SymbolicDimsOffDiagonalAndDtype) {
  onnx::ModelProto m = mb::NewModel(17);
  mb::AddInput(m, "x", {-1, -1});
  auto* n = mb::AddNode(m, "EyeLike", {"x"}, {"y"}, "eye");
  mb::SetInt(n, "k", -1);
  mb::SetInt(n, "dtype", onnx::TensorProto::INT64);
  mb::AddOutput(m, "y");
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{3, 4}, std::vector<int64_t>{5, 2}}) {
    ir::Tensor y = RunModel(m, {{"x", Iota(dims, 0.1f)}}, ir::OpKind::kEyeLike);
    ASSERT_EQ(y.dtype(), ir::DType::kInt64);
    ASSERT_EQ(y.dims(), dims);
    for (int64_t i = 0; i < dims[0]; ++i)
      for (int64_t j = 0; j < dims[1]; ++j) EXPECT_EQ(y.data<int64_t>()[i * dims[1] + j], i - 1 == j ? 1 : 0) << i << "," << j;
  }
}

// The LRN of x [N, C, L] by ONNX's formula, in double.
std::vector<double> RefLrn(const ir::Tensor& x, int64_t size, double alpha, double beta, double bias) {
  const int64_t N = x.dims()[0], C = x.dims()[1], L = x.dims()[2];
  std::vector<double> want;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t l = 0; l < L; ++l) {
        double sum = 0;
        const int64_t lo = std::max<int64_t>(0, c - (size - 1) / 2), hi = std::min<int64_t>(C - 1, c + std::min<int64_t>(size / 2, C));
        for (int64_t k = lo; k <= hi; ++k) {
          const double v = x.data<float>()[(b * C + k) * L + l];
          sum += v * v;
        }
        want.push_back(x.data<float>()[(b * C + c) * L + l] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta));
      }
  return want;
}

onnx::ModelProto LrnModel(int64_t channels, int64_t size, float alpha, float beta, float bias) {
  onnx::ModelProto m = mb::NewModel(13);
  mb::AddInput(m, "x", {-1, channels, 3});
  auto* n = mb::AddNode(m, "LRN", {"x"}, {"y"}, "lrn");
  mb::SetInt(n, "size", size);
  mb::SetFloat(n, "alpha", alpha);
  mb::SetFloat(n, "beta", beta);
  mb::SetFloat(n, "bias", bias);
  mb::AddOutput(m, "y");
  return m;
}

// A window wider than the channels (all of them, divided by size), up to a
// size of 2^40 in a hostile file: the pool's kernel is clipped, the result
// the formula's, at once.
TEST(LoweredLRN, WindowWiderThanTheChannels) {
  ir::Tensor x = Iota({2, 3, 3}, 0.41f);
  for (int64_t size : {int64_t{7}, int64_t{1} << 40}) {
    SCOPED_TRACE(size);
    ExpectNear(RunModel(LrnModel(3, size, 0.3f, 0.75f, 1.0f), {{"x", x}}, ir::OpKind::kLRN), {2, 3, 3},
               RefLrn(x, size, 0.3f, 0.75f, 1.0f));
  }
}

// LRN with an even window over a 3-D input and a symbolic batch: ONNX's
// window [c - floor((size-1)/2), c + ceil((size-1)/2)] is not centred (PyTorch's
// local_response_norm puts the extra channel on the other side).
TEST(LoweredLRN, EvenWindowThreeDimsAgainstTheFormula) {
  ir::Tensor x = Iota({2, 5, 3}, 0.37f);
  ExpectNear(RunModel(LrnModel(5, 4, 0.2f, 0.6f, 1.5f), {{"x", x}}, ir::OpKind::kLRN), {2, 5, 3},
             RefLrn(x, 4, 0.2f, 0.6f, 1.5f));
}

// Hardmax before opset 13 takes the maximum over the input coerced to 2-D at
// axis: axis 1 of [2, 3, 4] is one argmax over each batch row's 12 values.
TEST(LoweredHardmax, Opset11CoercesToTwoDims) {
  onnx::ModelProto m = mb::NewModel(11);
  mb::AddInput(m, "x", {2, 3, 4});
  mb::AddNode(m, "Hardmax", {"x"}, {"y"}, "hardmax");
  mb::AddOutput(m, "y");
  ir::Tensor x = Iota({2, 3, 4}, 0.53f);
  std::vector<double> want(24, 0.0);
  for (int64_t b = 0; b < 2; ++b) {
    int64_t best = 0;
    for (int64_t i = 1; i < 12; ++i)
      if (x.data<float>()[b * 12 + i] > x.data<float>()[b * 12 + best]) best = i;
    want[b * 12 + best] = 1.0;
  }
  ExpectNear(RunModel(m, {{"x", x}}, ir::OpKind::kHardmax), {2, 3, 4}, want);
}

}  // namespace
}  // namespace amptrain
