// The graphs a Trainer runs, built once from an imported classifier.
//
// BuildTrainGraph (training step, planned once per batch shape): one
// pipeline of passes (ir::PassManager), the verifier after each:
//   training-mode     BN uses batch statistics ("<stat>.update" outputs);
//                     Dropout draws a mask
//   fuse-gelu         the exporters' GELU decompositions become Gelu nodes
//                     (executor/optimize.h FuseGelu; the export keeps them),
//                     unless the AMP policy sets a precision for Erf, Tanh,
//                     Pow, Mul, Add or Div by op type
//   amp-precision     under an AMP policy (O1-O3): precision planning
//                     (amp::PlanPrecision with the training capability: the
//                     CPU kernel registry, not the model's opset), cast
//                     insertion and elimination. Weights stay fp32 masters
//                     read through one Cast each, whose gradient casts back
//                     to fp32; graph inputs and outputs keep their types, so
//                     the logits are fp32. O3 stores every weight (BN's
//                     parameters and statistics too) in the low type: no
//                     master copy, the gradients come out low
//   loss-head         on the model's logits output (TrainGraphOptions::output), in fp32: cross-entropy
//                     with labels int64 [N], or MSE with float targets
//   loss-scale-input  `loss_scale` (f32 scalar), the backward seed
//   backward          over the trainable initializers (float initializers
//                     that reach the loss through differentiable slots; BN
//                     running statistics and the initializers that
//                     TrainGraphOptions::freeze names are frozen); every
//                     initializer is accounted for in TrainGraph::parameters
//   state-inputs      every trainable initializer and every BN running
//                     statistic becomes a graph input of the same name, since
//                     they change every step and must not be baked into a
//                     plan as constants.
//   low-gradients     O1/O2 with TrainGraphOptions::low_gradients: a master
//                     weight's gradient output is the backward's fp16/bf16
//                     value, without the Cast to fp32 (the optimizer widens
//                     it exactly; TrainGraph::grads names the output)
//   low-weights       O1/O2 with TrainGraphOptions::low_weights: a master
//                     weight's one Cast to fp16/bf16 becomes an input,
//                     "<weight>.bf16" (TrainGraph::low_weights), fed with a
//                     low copy that the optimizer step rewrites as it updates
//                     the master (the same rounded values, no Cast pass)
//
//   inputs:  <data inputs...>, labels|targets, loss_scale (f32 scalar: the
//            backward seed, 1 without loss scaling), <params...>, <running stats...>,
//            <low weight copies...> (low-weights)
//   outputs: <model outputs...>, <stat>.update..., loss, <param>_grad...
//
// BuildEvalGraph (evaluation): the model in inference mode (BN with running
// statistics and one output, training_mode 0; Dropout is the identity in an
// inference session) with the same loss head and the same initializers
// turned into inputs, so it is planned once and fed the current parameters.
//   outputs: <model outputs...>, loss
//
// Checks before anything is built: at least one data input (besides
// initializers; any dtype: images, token ids, masks), a float output for the
// loss (TrainGraphOptions::output, or found when there is one candidate),
// of rank 2 [N, K] for cross-entropy with one label per sample (or the
// layouts of autodiff::AttachCrossEntropy for labels [N, d...]), with
// K == num_classes when the class count is known.
//
// The model must come from an import that kept its float initializers
// (importer::ImportOptions::keep_float_initializers, the default): one folded
// for inference may have turned parameters into constants (Transpose(W) into
// W^T), which then cannot be trained.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "amp/passes.h"
#include "amp/policy.h"
#include "autodiff/autodiff.h"
#include "autodiff/loss.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::executor::train {

struct TrainGraphOptions {
  std::string loss = "cross_entropy";  // cross_entropy | mse
  float label_smoothing = 0.0f;        // cross_entropy only, in [0, 1)
  // Cross-entropy: the labels of one sample ({} for [N] labels, {T} per
  // token, {H, W} per pixel; unset: one per sample, or whatever the logits
  // say) and where the logits hold the classes (autodiff::AttachCrossEntropy).
  std::optional<std::vector<int64_t>> label_dims;
  autodiff::ClassAxis class_axis = autodiff::ClassAxis::kAuto;
  int64_t ignore_index = autodiff::kDefaultIgnoreIndex;  // labels that count in neither loss nor accuracy
  // The output the loss reads; "" = the only output, or the only float one
  // of the loss's rank (logits [N, K] for cross-entropy, [N, K, d...] or
  // [N, d..., K] for labels [N, d...]); several are an error.
  std::string output;
  int64_t num_classes = 0;             // > 0: the model's output must have num_classes classes
  bool classes_at_least = false;       // then K >= num_classes will do (npy labels)
  // Mixed precision: the forward graph runs under this policy (O0 or unset: fp32).
  std::optional<amp::Policy> amp;
  // The trained model will also be exported in mixed precision: the plan is
  // then the intersection of the kernels' and the opset's capabilities.
  bool amp_for_export = false;
  // O1/O2: the fp32 master weights' gradients come out in the low type they
  // were computed in, not cast to fp32 (the Trainer's optimizer and gradient
  // check take them; a reader that wants fp32 gradients turns it off).
  bool low_gradients = true;
  // O1/O2: the forward reads low copies of the master weights kept by the
  // optimizer instead of casting the masters every step. It pays where the
  // device computes the low type natively; where fp16/bf16 is storage only,
  // cast fusion already rounds each master once in fp32 for its widened
  // readers, which low copies would make widen again (Trainer decides).
  bool low_weights = false;
  // Data inputs whose dims (all but the batch dim) the data fixes: a model
  // exported with a dynamic image size is built at the data's size, which
  // ops such as GlobalAveragePool's gradient need (tools' FitImages).
  std::map<std::string, std::vector<int64_t>> input_dims;
  // Initializers that get no gradient and no update: names or "re:REGEX" (ResolveFreeze).
  std::vector<std::string> freeze;
  // Float initializers that amptrain takes for constants
  // (ConstantLikeInitializers: Pow exponents, sinusoid frequencies) are not
  // trained unless this is set.
  bool train_all = false;
  // Relu -> MaxPool runs as MaxPool -> Relu (the same values and gradients,
  // the ReLU on the pooled tensor; train_graph.cc, ReluAfterMaxPool). Off only
  // to compare against.
  bool relu_after_max_pool = true;
  // Dropout in training mode (false: bypassed, the `grad` CLI's deterministic step).
  bool dropout = true;
};

// What a training step does with each initializer of the model: the
// parameters it trains, those the user froze, the BN running statistics, and
// every other initializer with the reason it gets no gradient. `train` and
// `grad` log Lines(), so no parameter goes untrained without a line naming it.
struct ParameterReport {
  struct Entry {
    std::string name;
    int64_t elements = 0;
    std::string reason;  // why it is not trained (frozen and untrained entries)
  };
  std::vector<Entry> trained, frozen, statistics, untrained;  // graph order each

  // "parameters: 4 trained (1230 elements), 1 frozen (8 elements), 0 BN running
  // statistics (0 elements), 2 other initializers not trained", then one line
  // per reason naming its initializers: "not trained (frozen by --freeze): b".
  std::vector<std::string> Lines() const;
};

// The report of a backward built over `g` (before its initializers became
// inputs): `frozen` are the user's (ResolveFreeze), `statistics` the BN
// running statistics, `constant_like` those of ConstantLikeInitializers (with
// the reason); all were BackwardOptions::frozen.
ParameterReport ReportParameters(const ir::Graph& g, const autodiff::BackwardResult& backward,
                                 const std::set<std::string>& frozen, const std::set<std::string>& statistics,
                                 const std::map<std::string, std::string>& constant_like = {});

// The initializers that `patterns` freeze. A pattern is an initializer name
// or "re:REGEX" (RE2, matching the whole name: amp/name_pattern.h), matched
// against the parameters: the float initializers of `g` other than
// `statistics` (BN running statistics, which are not trained anyway). A
// pattern that matches no parameter is an error naming it, and so is an
// exact name of a running statistic or of an integer initializer: a typo
// must not leave training a parameter the user meant to freeze.
StatusOr<std::set<std::string>> ResolveFreeze(const ir::Graph& g, const std::vector<std::string>& patterns,
                                              const std::set<std::string>& statistics);

struct TrainGraph {
  std::unique_ptr<ir::Graph> graph;
  std::vector<std::string> data_inputs;  // the model's data inputs, in order
  std::string target_input;  // "labels" (int64 [N]) or "targets"
  std::string logits;        // the output the loss reads (LossOutput): the model's output name
  // The graph output the top-1 count reads: `logits`, or (O1-O3, LowLogits in
  // train_graph.cc) the model's fp16/bf16 logits themselves.
  std::string accuracy_output;
  const std::string& AccuracyOutput() const { return accuracy_output.empty() ? logits : accuracy_output; }
  int64_t class_axis = 1;    // cross-entropy: the axis of `logits` that holds the classes
  std::string loss;          // scalar loss output
  std::string loss_scale;    // the backward seed input (training graph only)
  std::optional<amp::Report> amp_report;            // what the AMP passes did (training graph under a policy)
  std::vector<std::string> params;                  // trainable initializers, graph order
  std::map<std::string, std::string> grads;         // param -> gradient output name
  std::map<std::string, std::string> low_weights;   // param -> input of its low copy (low-weights)
  std::vector<std::string> running_stats;           // BN running mean/var initializers
  std::map<std::string, std::string> stat_updates;  // running stat -> "<stat>.update" output
                                                    // (empty in the eval graph)
  ParameterReport parameters;                       // every initializer (training graph only)
};

StatusOr<TrainGraph> BuildTrainGraph(const ir::Graph& model, const TrainGraphOptions& opts);

// The AMP passes on a training-mode graph `g`, as BuildTrainGraph runs them:
// fp32 master weights (no initializer conversion), graph inputs and outputs
// keep their types, capability = the CPU kernel registry (intersected with
// the opset's type constraints when `for_export`). O3 converts the
// initializers to the low type (no master copy).
StatusOr<amp::Report> ApplyTrainingPrecision(ir::Graph& g, const amp::Policy& policy, bool for_export);

// `state_names`: the initializers to turn into inputs (TrainGraph::params and
// running_stats of the training graph).
StatusOr<TrainGraph> BuildEvalGraph(const ir::Graph& model, const TrainGraphOptions& opts,
                                    const std::vector<std::string>& state_names);

// Replaces the Initializer `name` by a graph input of the same name and type
// (every use, graph outputs included, now reads the input).
Status InitializerToInput(ir::Graph& g, const std::string& name);

// `model` with initializer values replaced by `values` (by name; every name
// must be an initializer of the same dtype and dims): the exported trained model.
StatusOr<std::unique_ptr<ir::Graph>> WithInitializers(const ir::Graph& model,
                                                      const std::map<std::string, ir::Tensor>& values);

}  // namespace amptrain::executor::train
