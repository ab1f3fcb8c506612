#include "executor/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "executor/plan.h"

namespace amptrain::executor {

void Profile::Add(const Step& step, double ms) {
  auto [it, inserted] = index_.emplace(step.node, nodes_.size());
  if (inserted) nodes_.push_back({step.node->name(), std::string(step.node->op_name()), step.impl});
  NodeTime& n = nodes_[it->second];
  ++n.calls;
  n.total_ms += ms;
}

double Profile::total_ms() const {
  double total = 0.0;
  for (const NodeTime& n : nodes_) total += n.total_ms;
  return total;
}

namespace {

// One table of `rows` (name, calls, ms), largest first.
std::string Table(const char* head, std::vector<std::tuple<std::string, int64_t, double>> rows, double total,
                  size_t limit) {
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return std::get<2>(a) > std::get<2>(b); });
  std::string out = fmt::format("{:<40} {:>7} {:>11} {:>7}\n", head, "calls", "total ms", "share");
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const auto& [name, calls, ms] = rows[i];
    out += fmt::format("{:<40} {:>7} {:>11.2f} {:>6.1f}%\n", name, calls, ms, total > 0 ? 100.0 * ms / total : 0.0);
  }
  return out;
}

std::vector<std::tuple<std::string, int64_t, double>> GroupBy(const std::vector<Profile::NodeTime>& nodes,
                                                              std::string Profile::NodeTime::*key) {
  std::map<std::string, std::pair<int64_t, double>> groups;
  for (const Profile::NodeTime& n : nodes) {
    auto& g = groups[n.*key];
    g.first += n.calls;
    g.second += n.total_ms;
  }
  std::vector<std::tuple<std::string, int64_t, double>> rows;
  for (const auto& [name, g] : groups) rows.emplace_back(name, g.first, g.second);
  return rows;
}

}  // namespace

std::string Profile::Report(size_t top) const {
  const double total = total_ms();
  std::vector<std::tuple<std::string, int64_t, double>> by_node;
  for (const NodeTime& n : nodes_) by_node.emplace_back(fmt::format("{} ({}, {})", n.node, n.op, n.impl), n.calls, n.total_ms);
  return fmt::format("profile: {:.2f} ms in kernels\n\n", total) +
         Table("op", GroupBy(nodes_, &NodeTime::op), total, nodes_.size()) + "\n" +
         Table("impl", GroupBy(nodes_, &NodeTime::impl), total, nodes_.size()) + "\n" +
         Table(fmt::format("top {} nodes", top).c_str(), std::move(by_node), total, top);
}

}  // namespace amptrain::executor
