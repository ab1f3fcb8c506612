// Finite-difference gradient checks for autodiff rules (TESTING.md):
// a tiny float64 graph, loss = ReduceSum(out * R) with a random projection R,
// BuildBackward wrt every graph input, run with the reference kernels, and
// compare with central differences (eps 1e-6, |a - n| <= 1e-5 + 1e-3 |n|).
// Fails on an all-zero analytic gradient; runs the backward twice and
// requires bitwise-equal results.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "autodiff/autodiff.h"
#include "ir/graph.h"

namespace amptrain::autodiff::testing {

struct GradInput {
  std::string name;
  std::vector<int64_t> dims;
  double lo = -1.0, hi = 1.0;  // uniform range of the random values
};

using BuildFn = std::function<ir::Value(ir::Graph&, const std::vector<ir::Value>&)>;

// Small builders for test graphs.
// Attributes from {name, value} pairs: A({{"axis", int64_t{1}}}).
inline ir::Attributes A(std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
  ir::Attributes a;
  for (auto& [k, v] : kv) a.Set(k, v);
  return a;
}
ir::Value Op(ir::Graph& g, ir::OpKind op, std::vector<ir::Value> in, ir::Attributes a = {}, size_t outputs = 1,
             size_t which = 0);
ir::Value IntsConst(ir::Graph& g, const std::vector<int64_t>& v);
ir::Value DoublesConst(ir::Graph& g, const std::vector<double>& v, const std::vector<int64_t>& dims);
ir::Tensor RandomTensor(const std::vector<int64_t>& dims, double lo, double hi, uint32_t seed);

// Runs the check; adds gtest failures. Calls GTEST_SKIP-worthy reasons into *skip
// (a backward op whose shape rule or kernel has not landed yet) instead of failing.
void GradCheck(const std::vector<GradInput>& inputs, const BuildFn& build, std::string* skip);

}  // namespace amptrain::autodiff::testing

// GRADCHECK(inputs, build...): runs GradCheck and skips the test with the reason
// when a backward op is still pending (named in the skip message).
#define GRADCHECK(inputs, ...)                                             \
  do {                                                                    \
    std::string amp_skip_;                                                \
    ::amptrain::autodiff::testing::GradCheck(inputs, __VA_ARGS__, &amp_skip_);  \
    if (!amp_skip_.empty()) GTEST_SKIP() << amp_skip_;                    \
  } while (0)
