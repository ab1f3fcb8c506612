// Overflow provenance: the first node of a training step whose float output
// holds inf/NaN, found by a step observer (executor/session.h) on the run
// that overflowed, and the policy change that would keep it in fp32.
//
//   std::optional<OverflowSite> site;
//   run.observer = FirstNonFiniteObserver(session->run_graph(), &site);   // then session->Run(feeds, run)
//   if (site) { AttributeToModelNode(train_graph, *site); Describe(*site); PolicyFix(*site); }
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "executor/session.h"
#include "ir/graph.h"

namespace amptrain::executor::train {

struct OverflowSite {
  std::string node, op, dtype;  // the node that first produced inf/NaN, its op and its output's dtype
  std::string output;           // that output's value name
  bool backward = false;        // a node of the backward graph ("grad/..." names)
  int64_t elements = 0, nonfinite = 0;
  double finite_min = 0.0, finite_max = 0.0;  // the range of the output's finite values
  // The model node to keep in fp32: the node itself, the forward node a
  // backward node differentiates, or the consumer of an AMP-inserted Cast.
  // Empty when none can be named.
  std::string model_node;
};

// An observer recording into *site the first node (in execution order) with a
// non-finite float output; later nodes are not scanned.
// `graph` is the session's run_graph(), for value names.
StepObserver FirstNonFiniteObserver(const ir::Graph& graph, std::optional<OverflowSite>* site);

// Sets site.model_node from the training graph's names.
void AttributeToModelNode(const ir::Graph& train_graph, OverflowSite& site);

// "node '/Mul' (Mul, float16) output '/Mul_output_0': 128 of 256 values inf/NaN, finite range [-3.1, 65504]".
std::string Describe(const OverflowSite& site);

// The ready-to-paste policy-file line that keeps site.model_node in fp32,
// with the equivalent flag; empty without a model node.
std::string PolicyFix(const OverflowSite& site);

}  // namespace amptrain::executor::train
