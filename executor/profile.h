// Per-step timing of an InferenceSession (SessionOptions::profile).
//
// The session adds one sample per executed step (wall time of Kernel::Run);
// the profile accumulates them per node across runs until Reset(). Report()
// prints three tables: total ms per op type, per kernel implementation
// ("onednn", "reference", ...), and the `top` most expensive nodes, e.g.
//
//   op                      calls   total ms   share
//   FusedConv                 530     1712.4   91.3%
//   ...
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace amptrain::executor {

struct Step;

class Profile {
 public:
  struct NodeTime {
    std::string node, op, impl;
    int64_t calls = 0;
    double total_ms = 0.0;
  };

  void Add(const Step& step, double ms);
  void Reset() { nodes_.clear(), index_.clear(); }
  bool empty() const { return nodes_.empty(); }
  double total_ms() const;
  // Per-node totals in first-seen (schedule) order.
  const std::vector<NodeTime>& nodes() const { return nodes_; }
  std::string Report(size_t top = 10) const;

 private:
  std::vector<NodeTime> nodes_;
  std::unordered_map<const void*, size_t> index_;  // by ir::Node*
};

}  // namespace amptrain::executor
