// The initializer pass (export, and O3 training; O1/O2 training runs it on
// Constant nodes only): a float32 initializer or Constant whose every reader
// is a Cast to the policy's low dtype is stored in that dtype (same name,
// same place in the initializer list) and the Casts disappear. One read by
// fp32 nodes too keeps its fp32 copy (never converted once for everybody);
// its low readers get a low copy of it, a new initializer named
// "<name>_fp16" / "<name>_bf16", where the export allows it
// (`low_copies_of_shared`) and the copy is at most kMaxLowCopyBytes;
// otherwise they read it through one Cast.
//
// fp16 range: |x| > 65504 (finite) becomes +-65504, and non-zero |x| below
// the smallest subnormal 5.96e-8 becomes +-5.96e-8 (the sign and "non-zero"
// are kept, as onnxconverter-common does); each such value is counted in
// Report::clamped_values. inf and NaN stay as they are. bf16 has fp32's
// range: nothing is clamped.
#include <cmath>
#include <vector>

#include "amp/amp_internal.h"
#include "amp/passes.h"

namespace amptrain::amp {
namespace {

using ir::DType;
using ir::Node;
using ir::Value;

StatusOr<ir::Tensor> ConvertTensor(const ir::Tensor& t, DType low, int64_t* clamped) {
  AMP_ASSIGN_OR_RETURN(ir::Tensor out, ir::Tensor::Zeros(low, t.dims()));
  const float* src = t.data<float>();
  uint16_t* dst = out.data<uint16_t>();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    float x = src[i];
    if (low == DType::kBFloat16) {
      dst[i] = ir::FloatToBFloat16(x);
      continue;
    }
    float ax = std::fabs(x);
    if (std::isfinite(x) && ax > ir::kHalfMax) {
      x = std::copysign(ir::kHalfMax, x);
      ++*clamped;
    } else if (x != 0.0f && ax < ir::kHalfMinSubnormal) {
      x = std::copysign(ir::kHalfMinSubnormal, x);
      ++*clamped;
    }
    dst[i] = ir::FloatToHalf(x);
  }
  return out;
}

void CountClamped(Report* report, int64_t clamped, const std::string& name) {
  if (!report || clamped == 0) return;
  report->clamped_values += clamped;
  report->clamped_initializers.push_back(name);
}

// The readers of `v` that are Casts to `low` (and not graph outputs).
StatusOr<std::vector<Node*>> LowCasts(ir::Graph& g, Value v, DType low) {
  std::vector<Node*> out;
  for (const ir::Use& u : g.uses(v)) {
    Node* c = g.node(u.node);
    if (c->op() != ir::OpKind::kCast || g.is_graph_output(c->output(0))) continue;
    AMP_ASSIGN_OR_RETURN(DType to, internal::CastTarget(*c));
    if (to == low) out.push_back(c);
  }
  return out;
}

// `casts` (Casts of `v` to `low`) read a new initializer holding v's value
// converted instead, and disappear.
Status GiveLowCopy(ir::Graph& g, Value v, const ir::Tensor& t, DType low, const std::vector<Node*>& casts,
                   Report* report) {
  int64_t clamped = 0;
  AMP_ASSIGN_OR_RETURN(ir::Tensor converted, ConvertTensor(t, low, &clamped));
  // Named once the Casts are gone: the cast pass gave one of them the name
  // this copy should have.
  const std::string base = g.name(v) + (low == DType::kBFloat16 ? "_bf16" : "_fp16");
  Value copy = g.AddInitializer(g.UniqueName(base + "_copy"), std::move(converted));
  for (Node* c : casts) {
    g.ReplaceAllUsesWith(c->output(0), copy);
    AMP_RETURN_IF_ERROR(g.RemoveNode(c));
  }
  const std::string name = g.UniqueName(base);
  AMP_RETURN_IF_ERROR(g.RenameValue(copy, name));
  CountClamped(report, clamped, name);
  return Status::Ok();
}

StatusOr<bool> ConvertInitializers(ir::Graph& g, DType low, Report* report, bool constants_only,
                                   bool low_copies_of_shared) {
  bool changed = false;
  // The sources first: the loop removes Cast nodes, which a walk over the
  // live node list would then visit after they are freed.
  std::vector<Node*> sources;
  for (Node* n : g.nodes())
    if ((n->op() == ir::OpKind::kInitializer && !constants_only) || n->op() == ir::OpKind::kConstant)
      sources.push_back(n);
  for (Node* src : sources) {
    Value v = src->output(0);
    const ir::Tensor* t = g.ConstantValue(v);
    if (!t || t->dtype() != DType::kFloat32 || g.is_graph_output(v) || g.uses(v).empty()) continue;
    // A Cast reads v once (it has one input), so every reader is such a
    // Cast exactly when there are as many of them as uses of v.
    AMP_ASSIGN_OR_RETURN(std::vector<Node*> casts, LowCasts(g, v, low));
    if (casts.size() != g.uses(v).size()) {
      if (casts.empty() || !low_copies_of_shared || t->num_elements() * int64_t{2} > kMaxLowCopyBytes) continue;
      AMP_RETURN_IF_ERROR(GiveLowCopy(g, v, *t, low, casts, report));
      changed = true;
      continue;
    }
    int64_t clamped = 0;
    AMP_ASSIGN_OR_RETURN(ir::Tensor converted, ConvertTensor(*t, low, &clamped));
    src->attrs().Set("value", std::move(converted));
    g.mutable_info(v).type.dtype = low;
    for (Node* c : casts) {
      g.ReplaceAllUsesWith(c->output(0), v);
      AMP_RETURN_IF_ERROR(g.RemoveNode(c));
    }
    CountClamped(report, clamped, g.name(v));
    changed = true;
  }
  return changed;
}

}  // namespace

std::unique_ptr<ir::Pass> MakeConvertInitializersPass(const Policy& policy, Report* report, bool constants_only,
                                                      bool low_copies_of_shared) {
  DType low = policy.low;
  return std::make_unique<ir::FunctionPass>(
      constants_only ? "amp-convert-constants" : "amp-convert-initializers",
      [low, report, constants_only, low_copies_of_shared](ir::Graph& g) {
        return ConvertInitializers(g, low, report, constants_only, low_copies_of_shared);
      });
}

}  // namespace amptrain::amp
