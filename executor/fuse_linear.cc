// FuseTransposedWeights (executor/optimize.h): MatMul(A, Transpose(W)) of a
// 2-D W becomes a Gemm that reads W transposed in place.
#include <optional>
#include <vector>

#include "executor/optimize.h"

namespace amptrain::executor {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

// Whether `t` is a Transpose of a 2-D value that swaps its two axes (the
// default perm of a rank-2 input does).
bool SwapsTwoAxes(const Graph& g, const Node* t) {
  if (!t || t->op() != OpKind::kTranspose || t->num_inputs() != 1) return false;
  const ir::TensorType& w = g.type(t->input(0));
  if (!w.has_shape || w.shape.rank() != 2) return false;
  const std::vector<int64_t> perm = t->attrs().Ints("perm", {1, 0});
  return perm == std::vector<int64_t>{1, 0} || perm == std::vector<int64_t>{-1, -2} ||
         perm == std::vector<int64_t>{1, -2} || perm == std::vector<int64_t>{-1, 0};
}

// The Reshape target of A's leading dims and N: static sizes, with -1 for
// the one symbolic dim (nullopt with two or more, or with an empty dim,
// which a Reshape cannot state beside a -1).
std::optional<std::vector<int64_t>> RowsBackTo(const ir::Shape& a, int64_t n) {
  std::vector<int64_t> dims;
  int symbolic = 0;
  for (size_t d = 0; d + 1 < a.rank(); ++d) {
    symbolic += !a[d].is_static();
    if (a[d].is_static() && a[d].value == 0) return std::nullopt;
    dims.push_back(a[d].is_static() ? a[d].value : -1);
  }
  if (symbolic > 1 || n == 0) return std::nullopt;
  dims.push_back(n);
  return dims;
}

}  // namespace

StatusOr<int> FuseTransposedWeights(Graph& g, const std::function<bool(const Node&)>& keep) {
  AMP_ASSIGN_OR_RETURN(std::vector<Node*> order, g.TopologicalOrder());
  int fused = 0;
  for (Node* mm : order) {
    if (mm->op() != OpKind::kMatMul || mm->num_inputs() != 2) continue;
    const Value a = mm->input(0), wt = mm->input(1), y = mm->output(0);
    Node* t = g.producer(wt);
    if (!SwapsTwoAxes(g, t) || (keep && (keep(*mm) || keep(*t)))) continue;
    const Value w = t->input(0);
    const ir::TensorType at = g.type(a), yt = g.type(y);
    if (!at.has_shape || at.shape.rank() < 2 || !yt.has_shape || !ir::IsFloat(at.dtype) ||
        at.dtype != g.type(w).dtype || at.dtype != yt.dtype)
      continue;
    const ir::Dim n = g.type(w).shape[0];
    if (!n.is_static()) continue;
    const size_t rank = at.shape.rank();
    std::optional<std::vector<int64_t>> back;
    if (rank > 2 && !(back = RowsBackTo(at.shape, n.value))) continue;
    // [.., K] -> rows [M, K] (a view), one GEMM against W^T, then the rows
    // back to [.., N] (a view). The Gemm keeps the MatMul's name, so that
    // a policy naming the MatMul's node still finds it.
    Value rows = a;
    if (rank > 2) {
      Node* flatten = g.AddNode(OpKind::kFlatten, {a}, 1, g.UniqueName(mm->name() + "/rows"));
      flatten->attrs().Set("axis", static_cast<int64_t>(rank - 1));
      AMP_RETURN_IF_ERROR(g.InferNode(flatten));
      rows = flatten->output(0);
    }
    const std::string mm_name = mm->name(), y_name = g.name(y);
    mm->set_name(g.UniqueName(mm_name + "/matmul"));
    Node* gemm = g.AddNode(OpKind::kGemm, {rows, w}, 1, mm_name);
    gemm->attrs().Set("transB", int64_t{1});
    AMP_RETURN_IF_ERROR(g.InferNode(gemm));
    Value out = gemm->output(0);
    if (rank > 2) {
      Node* shape = g.AddNode(OpKind::kConstant, {}, 1, g.UniqueName(mm_name + "/dims"));
      shape->attrs().Set("value", ir::Tensor::Int64s(*back, {static_cast<int64_t>(back->size())}));
      AMP_RETURN_IF_ERROR(g.InferNode(shape));
      Node* reshape = g.AddNode(OpKind::kReshape, {out, shape->output(0)}, 1, g.UniqueName(mm_name + "/back"));
      reshape->attrs().Set("allowzero", int64_t{1});  // the dims as stated (no 0 among them)
      AMP_RETURN_IF_ERROR(g.InferNode(reshape));
      out = reshape->output(0);
      g.mutable_info(out).type = yt;  // the MatMul's dims, a symbolic one included
    }
    g.ReplaceAllUsesWith(y, out);
    AMP_RETURN_IF_ERROR(g.RemoveNode(mm));
    if (g.uses(wt).empty() && !g.is_graph_output(wt)) AMP_RETURN_IF_ERROR(g.RemoveNode(t));
    AMP_RETURN_IF_ERROR(g.RenameValue(out, y_name));
    ++fused;
  }
  return fused;
}

}  // namespace amptrain::executor
