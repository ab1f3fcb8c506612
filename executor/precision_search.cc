#include "executor/precision_search.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <limits>
#include <random>

#include "amp/plan.h"
#include "executor/session.h"
#include "kernels/cpu/float_convert.h"

namespace amptrain::executor {

namespace {

// `t` as the dtype `want` (float32 <-> float16/bfloat16), or `t` itself.
StatusOr<ir::Tensor> AsDType(const ir::Tensor& t, ir::DType want) {
  if (t.dtype() == want) return t;
  if (t.dtype() != ir::DType::kFloat32 || !ir::IsLowPrecision(want))
    return InvalidArgument("validation input of type ", ir::DTypeName(t.dtype()), " cannot feed a ",
                           ir::DTypeName(want), " input");
  AMP_ASSIGN_OR_RETURN(ir::Tensor out, ir::Tensor::Zeros(want, t.dims()));
  kernels::cpu::NarrowFromFloat(want, t.data<float>(), out.raw(), t.num_elements(), 1);
  return out;
}

class Trials {
 public:
  Trials(const ir::Graph& model, const amp::Policy& policy, const amp::ConvertOptions& convert,
         const std::vector<InputBatch>& batches, const PrecisionSearchOptions& options,
         const std::vector<std::string>& candidates)
      : model_(model), policy_(policy), convert_(convert), batches_(batches), options_(options),
        candidates_(candidates) {}

  Status RunReference() {
    AMP_ASSIGN_OR_RETURN(reference_, RunGraph(model_.Clone()));
    return Status::Ok();
  }

  amp::Policy PolicyFor(int64_t k) const {
    amp::Policy p = policy_;
    for (int64_t i = 0; i < k; ++i) p.node_overrides.push_back({candidates_[i], false, ir::DType::kFloat32});
    return p;
  }

  // Converts and runs the model with the first k candidates kept fp32.
  StatusOr<PrecisionTrial> Measure(int64_t k) {
    std::unique_ptr<ir::Graph> g = model_.Clone();
    StatusOr<amp::Report> report = amp::Convert(*g, PolicyFor(k), convert_);
    if (!report.ok()) return report.status().WithContext(StrCat("converting with ", k, " nodes kept fp32"));
    PrecisionTrial t;
    t.fp32_nodes = k;
    t.casts = report->casts_final;
    StatusOr<std::vector<std::vector<ir::Tensor>>> outs = RunGraph(std::move(g));
    if (!outs.ok()) return outs.status().WithContext(StrCat("running the conversion with ", k, " nodes kept fp32"));
    for (size_t i = 0; i < reference_.front().size(); ++i) {
      if (!ir::IsFloat(reference_.front()[i].dtype())) continue;
      L2Error e;
      for (size_t b = 0; b < reference_.size(); ++b) e.Add((*outs)[b][i], reference_[b][i]);
      t.error = std::max(t.error, e.Relative());
    }
    spdlog::info("precision search: {} of {} low nodes kept fp32: relative error {:.3g} ({} Casts)", k,
                 candidates_.size(), t.error, t.casts);
    trials_.push_back(t);
    return t;
  }

  std::vector<PrecisionTrial> trials() const { return trials_; }

 private:
  // The graph's outputs on every batch.
  StatusOr<std::vector<std::vector<ir::Tensor>>> RunGraph(std::unique_ptr<ir::Graph> g) {
    std::vector<InputBatch> feeds(batches_.size());
    for (size_t b = 0; b < batches_.size(); ++b) {
      for (ir::Value v : g->inputs()) {
        auto it = batches_[b].find(g->name(v));
        if (it == batches_[b].end()) return InvalidArgument("no validation input for graph input '", g->name(v), "'");
        AMP_ASSIGN_OR_RETURN(feeds[b][it->first], AsDType(it->second, g->type(v).dtype));
      }
    }
    SessionOptions so;
    so.threads = options_.threads;
    AMP_ASSIGN_OR_RETURN(auto session, InferenceSession::Create(std::move(g), so));
    std::vector<std::vector<ir::Tensor>> outs;
    for (const InputBatch& feed : feeds) {
      AMP_ASSIGN_OR_RETURN(std::vector<ir::Tensor> o, session->Run(feed));
      outs.push_back(std::move(o));
    }
    return outs;
  }

  const ir::Graph& model_;
  const amp::Policy& policy_;
  const amp::ConvertOptions& convert_;
  const std::vector<InputBatch>& batches_;
  const PrecisionSearchOptions& options_;
  const std::vector<std::string>& candidates_;
  std::vector<std::vector<ir::Tensor>> reference_;  // per batch, per graph output
  std::vector<PrecisionTrial> trials_;
};

// The named nodes that `policy` puts in the low type, in topological order
// (names that occur twice are left out: an override would hit both).
StatusOr<std::vector<std::string>> LowNodes(const ir::Graph& model, const amp::Policy& policy,
                                            const amp::Capability& capability) {
  AMP_ASSIGN_OR_RETURN(amp::PrecisionPlan plan, amp::PlanPrecision(model, policy, capability));
  std::map<std::string, int> uses;
  for (const ir::Node* n : model.nodes()) ++uses[n->name()];
  AMP_ASSIGN_OR_RETURN(auto order, model.TopologicalOrder());
  std::vector<std::string> out;
  for (const ir::Node* n : order) {
    const amp::NodePlan* np = plan.Find(n->id());
    if (!np || !ir::IsLowPrecision(np->decision.dtype)) continue;
    if (n->name().empty() || uses[n->name()] > 1) continue;
    out.push_back(n->name());
  }
  return out;
}

}  // namespace

void L2Error::Add(const ir::Tensor& got, const ir::Tensor& want) {
  if (got.num_elements() != want.num_elements()) invalid = true;
  const int64_t n = std::min(got.num_elements(), want.num_elements());
  for (int64_t i = 0; i < n && !invalid; ++i) {
    const double g = got.GetAsDouble(i), w = want.GetAsDouble(i);
    if (!std::isfinite(g)) invalid = true;
    diff += (g - w) * (g - w);
    norm += w * w;
  }
}

double L2Error::Relative() const {
  if (invalid) return std::numeric_limits<double>::infinity();
  if (norm == 0.0) return diff == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / norm);
}

double RelativeL2Error(const ir::Tensor& got, const ir::Tensor& want) {
  L2Error e;
  e.Add(got, want);
  return e.Relative();
}

StatusOr<std::vector<InputBatch>> RandomValidationBatches(const ir::Graph& model, int64_t samples, uint64_t seed) {
  std::vector<InputBatch> out;
  int64_t have = 0;
  while (have < samples) {
    AMP_ASSIGN_OR_RETURN(InputBatch b, RandomNormalInputs(model, samples, seed + out.size()));
    // A model without inputs, or with a scalar one, has one sample a run.
    const bool batched = !b.empty() && !b.begin()->second.dims().empty();
    have += batched ? std::max<int64_t>(b.begin()->second.dims()[0], 1) : samples;
    out.push_back(std::move(b));
  }
  return out;
}

StatusOr<InputBatch> RandomNormalInputs(const ir::Graph& model, int64_t batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::map<std::string, ir::Tensor> out;
  for (ir::Value v : model.inputs()) {
    const ir::TensorType& t = model.type(v);
    const std::string& name = model.name(v);
    if (t.dtype != ir::DType::kFloat32)
      return InvalidArgument("input '", name, "' is ", ir::DTypeName(t.dtype),
                             ": random validation data is made for float32 inputs only");
    if (!t.has_shape) return InvalidArgument("input '", name, "' has no known shape to make validation data for");
    std::vector<int64_t> dims;
    for (size_t d = 0; d < t.shape.dims().size(); ++d) {
      const ir::Dim& dim = t.shape.dims()[d];
      if (dim.is_static()) dims.push_back(dim.value);
      else if (d == 0) dims.push_back(batch);
      else
        return InvalidArgument("input '", name, "' has a dynamic dimension ", d, " (", t.ToString(),
                               "): random validation data needs its size");
    }
    AMP_ASSIGN_OR_RETURN(ir::Tensor x, ir::Tensor::Zeros(ir::DType::kFloat32, dims));
    float* p = x.data<float>();
    for (int64_t i = 0; i < x.num_elements(); ++i) p[i] = normal(rng);
    out[name] = x;
  }
  return out;
}

StatusOr<PrecisionSearch> SearchFp32Prefix(const ir::Graph& model, const amp::Policy& policy,
                                           const amp::ConvertOptions& convert, const std::vector<InputBatch>& batches,
                                           const PrecisionSearchOptions& options) {
  if (!(options.max_error >= 0.0)) return InvalidArgument("the error bound must be >= 0, got ", options.max_error);
  if (batches.empty()) return InvalidArgument("the precision search needs at least one validation batch");
  PrecisionSearch s;
  AMP_ASSIGN_OR_RETURN(s.candidates, LowNodes(model, policy, convert.capability));
  Trials trials(model, policy, convert, batches, options, s.candidates);
  AMP_RETURN_IF_ERROR(trials.RunReference());

  const int64_t n = static_cast<int64_t>(s.candidates.size());
  AMP_ASSIGN_OR_RETURN(PrecisionTrial best, trials.Measure(0));
  if (best.error > options.max_error) {
    AMP_ASSIGN_OR_RETURN(PrecisionTrial all, trials.Measure(n));
    if (all.error > options.max_error)
      return FailedPrecondition("no conversion meets the error bound ", options.max_error, ": ", best.error,
                                " as the policy converts, ", all.error, " with all ", n,
                                " of its low nodes kept fp32");
    // Invariant: trial `hi` meets the bound, trial `lo` does not.
    int64_t lo = 0, hi = n;
    best = all;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      AMP_ASSIGN_OR_RETURN(PrecisionTrial t, trials.Measure(mid));
      if (t.error <= options.max_error) {
        hi = mid;
        best = t;
      } else {
        lo = mid;
      }
    }
  }
  s.chosen = best;
  s.fp32_nodes.assign(s.candidates.begin(), s.candidates.begin() + best.fp32_nodes);
  s.policy = trials.PolicyFor(best.fp32_nodes);
  s.trials = trials.trials();
  return s;
}

}  // namespace amptrain::executor
