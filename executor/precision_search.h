// Accuracy-guided conversion: how much of a mixed-precision conversion must
// stay fp32 for the converted model to stay within an error bound, measured.
//
//   PrecisionSearchOptions opts{.max_error = 1e-2};
//   AMP_ASSIGN_OR_RETURN(PrecisionSearch s, SearchFp32Prefix(fp32_model, policy, convert, batches, opts));
//   amp::Convert(model, s.policy, convert);   // s.policy = policy + fp32 overrides of s.fp32_nodes
//
// The candidates are the nodes the policy's plan puts in the low type, in
// topological order (named nodes only: the result is written as node
// overrides, the policy file's `fp32_nodes`). Trial k keeps the first k of
// them fp32; its error is the largest relative L2 error, over the float graph
// outputs, of the converted model against the fp32 model, both run by
// InferenceSession on every batch of `batches`, pooled over the batches (as
// if concatenated: the samples with the largest outputs weigh most, as they
// do in one batch). Rounding errors that enter early are amplified
// by everything after them, so a prefix is the cheapest cut: it moves the
// graph input's Cast down the graph rather than adding Cast pairs. The search
// is a binary search for the smallest k whose error is within the bound
// (error is treated as non-increasing in k; every trial is measured and kept,
// and the chosen k is one that was measured within the bound).
//
// Errors: a bound that not even the all-fp32 trial meets, names both numbers;
// a failing conversion or run, with the trial's context.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "amp/passes.h"
#include "amp/policy.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor {

struct PrecisionSearchOptions {
  double max_error = 1e-2;  // relative L2 error bound, per float output
  int threads = 0;          // sessions' threads; 0 = all cores
};

struct PrecisionTrial {
  int64_t fp32_nodes = 0;  // the first k candidates kept fp32
  double error = 0.0;      // largest relative L2 error over the float outputs
  int64_t casts = 0;       // Cast nodes of the converted model
};

struct PrecisionSearch {
  amp::Policy policy;                   // the given policy plus the fp32 overrides
  std::vector<std::string> candidates;  // the low nodes of the given policy's plan, topological order
  std::vector<std::string> fp32_nodes;  // the chosen prefix of `candidates`
  std::vector<PrecisionTrial> trials;   // in the order measured; trials.front() is the policy as given
  PrecisionTrial chosen;
};

// One validation batch: a tensor per graph input name, as InferenceSession::Run takes them.
using InputBatch = std::map<std::string, ir::Tensor>;

// Searches on copies of `model` (which stays as it is); `batches` not empty.
StatusOr<PrecisionSearch> SearchFp32Prefix(const ir::Graph& model, const amp::Policy& policy,
                                           const amp::ConvertOptions& convert, const std::vector<InputBatch>& batches,
                                           const PrecisionSearchOptions& options);

// Sums of squares for a relative L2 error pooled over several tensors.
struct L2Error {
  double diff = 0.0, norm = 0.0;
  bool invalid = false;  // got held inf/NaN, or the element counts differ
  // Adds one pair: got (any float dtype) against want, element by element in double.
  void Add(const ir::Tensor& got, const ir::Tensor& want);
  // sqrt(diff / norm); 0 when both are 0, infinity when only want is 0 or when invalid.
  double Relative() const;
};

// The relative L2 error ||got - want|| / ||want|| of one pair (L2Error).
double RelativeL2Error(const ir::Tensor& got, const ir::Tensor& want);

// Seeded standard-normal inputs for every graph input of `model`: float
// inputs with static shapes, except that a dynamic first (batch) dimension
// becomes `batch`. Any other input is an error naming it (the caller asks for
// validation data instead).
StatusOr<InputBatch> RandomNormalInputs(const ir::Graph& model, int64_t batch, uint64_t seed);

// At least `samples` standard-normal samples (RandomNormalInputs): one batch
// of `samples` where the batch dimension is dynamic, else as many batches of
// the model's static batch as it takes, seeds `seed`, `seed + 1`, ...
StatusOr<std::vector<InputBatch>> RandomValidationBatches(const ir::Graph& model, int64_t samples, uint64_t seed);

}  // namespace amptrain::executor
