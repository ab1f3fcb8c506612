// SplitToSequence read only by SequenceAt at constant positions, lowered to
// Slices on the proto before validation (detail::LowerSequenceSplits).
// PyTorch's dynamo exporter writes x.chunk(n, dim) and x.split(s, dim) this
// way when it does not optimize (the export a user trains from):
//   seq = SplitToSequence(x, split, axis, keepdims); y_i = SequenceAt(seq, i)
// becomes y_i = Slice(x, start_i, end_i, axis): the IR has no sequence type,
// and a Slice trains (SliceGrad). With a scalar `split` s (chunks of s, the
// last one shorter) piece i is [i*s, i*s + s), Slice clamping the end; with
// a 1-D `split` of sizes, the running sums; with no `split`, pieces of 1,
// squeezed where keepdims = 0. A sequence used any other way is left as it
// is, and validation names SplitToSequence as an unsupported op.
//
// Sequences built element by element (detail::LowerStaticSequences): from
// SequenceEmpty / SequenceConstruct through SequenceInsert (at the end, or
// at a constant position) and Identity, every sequence is a known list of
// tensor names, as after a Loop that appends a row per iteration has been
// unrolled (the dynamo export of nn.EmbeddingBag). Its readers become tensor
// ops: SequenceAt at a constant position an Identity of that element,
// SequenceLength a constant, ConcatFromSequence a Concat (of Unsqueezed
// elements with new_axis = 1); the builders go. A sequence read any other
// way, or a graph output, leaves the whole graph as it was.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "importer/import_internal.h"
#include "importer/tensor_proto.h"
#include "ir/status.h"

namespace amptrain::importer::detail {

namespace {

bool IsDefault(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// The int64/int32 values of a constant: an initializer, or a Constant node's
// tensor or value_int(s). nullopt when `name` is not one.
class Constants {
 public:
  explicit Constants(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) tensors_[t.name()] = &t;
    for (const auto& n : g.node()) {
      if (n.op_type() != "Constant" || !IsDefault(n.domain()) || n.output_size() != 1) continue;
      for (const auto& a : n.attribute()) {
        if (a.name() == "value" && a.has_t()) tensors_[n.output(0)] = &a.t();
        if (a.name() == "value_int") ints_[n.output(0)] = {{a.i()}, true};
        if (a.name() == "value_ints") ints_[n.output(0)] = {{a.ints().begin(), a.ints().end()}, false};
      }
    }
  }

  // Values and whether it is a scalar.
  std::optional<std::pair<std::vector<int64_t>, bool>> Ints(const std::string& name, const std::string& model_dir) const {
    if (auto it = ints_.find(name); it != ints_.end()) return it->second;
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return std::nullopt;
    StatusOr<ir::Tensor> t = TensorFromProto(*it->second, model_dir);
    if (!t.ok() || (t->dtype() != ir::DType::kInt64 && t->dtype() != ir::DType::kInt32) || t->dims().size() > 1)
      return std::nullopt;
    return std::make_pair(t->ToInt64Vector(), t->dims().empty());
  }

 private:
  std::unordered_map<std::string, const onnx::TensorProto*> tensors_;
  std::unordered_map<std::string, std::pair<std::vector<int64_t>, bool>> ints_;
};

class Lowering {
 public:
  Lowering(onnx::GraphProto& g, const std::string& model_dir)
      : g_(g), model_dir_(model_dir), constants_(g), edit_(g) {
    for (const auto& v : g.output()) graph_outputs_.insert(v.name());
  }

  Status Run() {
    std::unordered_map<std::string, std::vector<int>> readers;
    for (int i = 0; i < g_.node_size(); ++i)
      for (const auto& in : g_.node(i).input()) readers[in].push_back(i);
    std::vector<bool> drop(static_cast<size_t>(g_.node_size()), false);
    const int original = g_.node_size();
    for (int i = 0; i < original; ++i) {
      const onnx::NodeProto& split = g_.node(i);
      if (split.op_type() != "SplitToSequence" || !IsDefault(split.domain()) || split.output_size() != 1 ||
          split.input_size() < 1 || split.input(0).empty() || split.output(0).empty() ||
          graph_outputs_.count(split.output(0)))
        continue;
      AMP_ASSIGN_OR_RETURN(bool lowered, Lower(i, readers[split.output(0)]));
      if (lowered) drop[static_cast<size_t>(i)] = true;
    }
    auto* nodes = g_.mutable_node();
    for (int i = original - 1; i >= 0; --i)
      if (drop[static_cast<size_t>(i)]) nodes->DeleteSubrange(i, 1);
    return Status::Ok();
  }

 private:
  // Rewrites node `split`'s readers when every one is a SequenceAt at a
  // constant position that can be placed; false leaves the graph as it was.
  StatusOr<bool> Lower(int split_index, const std::vector<int>& readers) {
    const onnx::NodeProto& split = g_.node(split_index);
    int64_t axis = 0, keepdims = 1;
    for (const auto& a : split.attribute()) {
      if (a.name() == "axis") axis = a.i();
      if (a.name() == "keepdims") keepdims = a.i();
    }
    std::optional<std::pair<std::vector<int64_t>, bool>> sizes;
    const bool has_split = split.input_size() > 1 && !split.input(1).empty();
    if (has_split) {
      sizes = constants_.Ints(split.input(1), model_dir_);
      if (!sizes) return false;
      if (sizes->second && (sizes->first.size() != 1 || sizes->first[0] < 1)) return false;
      for (int64_t s : sizes->first)
        if (s < 0) return false;
    }
    // Each reader's [start, end) along the axis.
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int r : readers) {
      const onnx::NodeProto& at = g_.node(r);
      if (at.op_type() != "SequenceAt" || !IsDefault(at.domain()) || at.input_size() != 2 || at.output_size() != 1 ||
          at.input(0) != split.output(0))
        return false;
      auto pos = constants_.Ints(at.input(1), model_dir_);
      if (!pos || pos->first.size() != 1) return false;
      int64_t p = pos->first[0];
      if (!has_split) {  // pieces of 1; from the end where p < 0
        ranges.push_back({p, p == -1 ? std::numeric_limits<int64_t>::max() : p + 1});
      } else if (sizes->second) {  // chunks of s: the count is not known here
        if (p < 0) return false;
        const int64_t s = sizes->first[0];
        if (p > std::numeric_limits<int64_t>::max() / s - 1) return false;
        ranges.push_back({p * s, p * s + s});
      } else {
        const auto count = static_cast<int64_t>(sizes->first.size());
        if (p < 0) p += count;
        if (p < 0 || p >= count) return false;
        int64_t start = 0, end = 0;
        for (int64_t k = 0; k < p; ++k)
          if (__builtin_add_overflow(start, sizes->first[static_cast<size_t>(k)], &start)) return false;
        if (__builtin_add_overflow(start, sizes->first[static_cast<size_t>(p)], &end)) return false;
        ranges.push_back({start, end});
      }
    }
    const std::string x = split.input(0), base = split.name().empty() ? split.output(0) : split.name();
    const std::string axes = edit_.Ints(base + "_axes", {axis});
    for (size_t k = 0; k < readers.size(); ++k) {
      onnx::NodeProto* at = g_.mutable_node(readers[k]);
      const std::string out = at->output(0);
      const bool squeeze = !has_split && keepdims == 0;
      const std::string sliced = squeeze ? edit_.Fresh(out + "_piece") : out;
      const std::string starts = edit_.Ints(base + "_start", {ranges[k].first});
      const std::string ends = edit_.Ints(base + "_end", {ranges[k].second});
      at->set_op_type("Slice");
      at->clear_input();
      for (const std::string& in : {x, starts, ends, axes}) at->add_input(in);
      at->clear_attribute();
      at->set_output(0, sliced);
      if (squeeze) {
        onnx::NodeProto* sq = g_.add_node();
        sq->set_op_type("Squeeze");
        sq->set_name(edit_.Fresh(at->name() + "_squeeze"));
        sq->add_input(sliced);
        sq->add_input(axes);
        sq->add_output(out);
      }
    }
    return true;
  }

  onnx::GraphProto& g_;
  const std::string& model_dir_;
  Constants constants_;
  ProtoEditor edit_;
  std::unordered_set<std::string> graph_outputs_;
};

}  // namespace

namespace {

// Sequences whose elements are known names (see LowerStaticSequences).
class StaticSequences {
 public:
  StaticSequences(onnx::GraphProto& g, const std::string& model_dir)
      : g_(g), model_dir_(model_dir), constants_(g), edit_(g) {}

  Status Run() {
    // Pass 1: the elements of every sequence built from nothing; a sequence
    // read any other way, or a graph output, leaves the graph as it was.
    std::unordered_set<std::string> outputs;
    for (const auto& v : g_.output()) outputs.insert(v.name());
    std::vector<int> handled;
    for (int i = 0; i < g_.node_size(); ++i) {
      const onnx::NodeProto& n = g_.node(i);
      const std::string& op = n.op_type();
      auto seq = [&](int k) { return k < n.input_size() ? elements_.find(n.input(k)) : elements_.end(); };
      bool reads_sequence = false;
      for (const auto& in : n.input()) reads_sequence = reads_sequence || elements_.count(in);
      if (!IsDefault(n.domain())) {
        if (reads_sequence) return Status::Ok();
        continue;
      }
      if (op == "SequenceEmpty" && n.output_size() == 1) {
        elements_[n.output(0)] = {};
      } else if (op == "SequenceConstruct" && n.output_size() == 1) {
        elements_[n.output(0)] = {n.input().begin(), n.input().end()};
      } else if (op == "SequenceInsert" && seq(0) != elements_.end() && n.input_size() >= 2 && n.output_size() == 1) {
        std::vector<std::string> e = seq(0)->second;
        int64_t at = static_cast<int64_t>(e.size());
        if (n.input_size() > 2 && !n.input(2).empty()) {
          auto pos = constants_.Ints(n.input(2), model_dir_);
          if (!pos || pos->first.size() != 1) return Status::Ok();
          at = pos->first[0] < 0 ? pos->first[0] + static_cast<int64_t>(e.size()) : pos->first[0];
          if (at < 0 || at > static_cast<int64_t>(e.size())) return Status::Ok();
        }
        e.insert(e.begin() + at, n.input(1));
        elements_[n.output(0)] = std::move(e);
      } else if (op == "Identity" && seq(0) != elements_.end() && n.output_size() == 1) {
        elements_[n.output(0)] = seq(0)->second;
      } else if ((op == "SequenceAt" || op == "SequenceLength" || op == "ConcatFromSequence") &&
                 seq(0) != elements_.end()) {
        // read below
      } else {
        if (reads_sequence) return Status::Ok();
        continue;
      }
      handled.push_back(i);
    }
    for (const auto& [name, e] : elements_)
      if (outputs.count(name)) return Status::Ok();
    // Pass 2: readers become tensor ops; builders go.
    std::vector<bool> drop(static_cast<size_t>(g_.node_size()), false);
    std::vector<std::pair<int, std::vector<onnx::NodeProto>>> before;  // Unsqueezes, placed before their Concat
    for (int i : handled) {
      onnx::NodeProto& n = *g_.mutable_node(i);
      const std::string& op = n.op_type();
      if (op != "SequenceAt" && op != "SequenceLength" && op != "ConcatFromSequence") {
        drop[static_cast<size_t>(i)] = true;
        continue;
      }
      const std::vector<std::string> e = elements_.at(n.input(0));
      const auto count = static_cast<int64_t>(e.size());
      if (op == "SequenceAt") {
        auto pos = n.input_size() > 1 ? constants_.Ints(n.input(1), model_dir_) : std::nullopt;
        if (!pos || pos->first.size() != 1) return InvalidArgument("SequenceAt ", NodeLabel(n, i), ": the position must be a constant");
        int64_t at = pos->first[0] < 0 ? pos->first[0] + count : pos->first[0];
        if (at < 0 || at >= count)
          return InvalidArgument("SequenceAt ", NodeLabel(n, i), ": position ", pos->first[0], " of a sequence of ", count);
        Rewrite(n, "Identity", {e[static_cast<size_t>(at)]});
      } else if (op == "SequenceLength") {
        Rewrite(n, "Identity", {edit_.Ints(n.output(0) + "_length", {count}, true)});
      } else {
        if (e.empty()) return InvalidArgument("ConcatFromSequence ", NodeLabel(n, i), " of an empty sequence");
        int64_t axis = 0, new_axis = 0;
        for (const auto& a : n.attribute()) {
          if (a.name() == "axis") axis = a.i();
          if (a.name() == "new_axis") new_axis = a.i();
        }
        std::vector<std::string> parts = e;
        std::vector<onnx::NodeProto> unsqueezes;
        if (new_axis) {
          const std::string axes = edit_.Ints(n.output(0) + "_axis", {axis}, false);
          for (std::string& part : parts) {
            onnx::NodeProto u;
            u.set_op_type("Unsqueeze");
            u.set_name(edit_.Fresh(part + "_unsqueeze"));
            u.add_input(part);
            u.add_input(axes);
            part = edit_.Fresh(part + "_unsqueezed");
            u.add_output(part);
            unsqueezes.push_back(std::move(u));
          }
        }
        Rewrite(n, "Concat", parts);
        onnx::AttributeProto* a = n.add_attribute();
        a->set_name("axis");
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(axis);
        if (!unsqueezes.empty()) before.emplace_back(i, std::move(unsqueezes));
      }
    }
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    size_t next = 0;
    for (int i = 0; i < g_.node_size(); ++i) {
      if (next < before.size() && before[next].first == i)
        for (auto& u : before[next++].second) *nodes.Add() = std::move(u);
      if (!drop[static_cast<size_t>(i)]) *nodes.Add() = std::move(*g_.mutable_node(i));
    }
    g_.mutable_node()->Swap(&nodes);
    return Status::Ok();
  }

 private:
  static void Rewrite(onnx::NodeProto& n, const char* op, const std::vector<std::string>& inputs) {
    n.set_op_type(op);
    n.clear_attribute();
    n.clear_input();
    for (const auto& in : inputs) n.add_input(in);
  }

  onnx::GraphProto& g_;
  const std::string& model_dir_;
  Constants constants_;
  ProtoEditor edit_;
  std::unordered_map<std::string, std::vector<std::string>> elements_;
};

}  // namespace

Status LowerStaticSequences(onnx::GraphProto& graph, const std::string& model_dir) {
  bool any = false;
  for (const auto& n : graph.node()) any = any || n.op_type() == "SequenceEmpty" || n.op_type() == "SequenceConstruct";
  if (!any) return Status::Ok();
  return StaticSequences(graph, model_dir).Run();
}

Status LowerSequenceSplits(onnx::GraphProto& graph, const std::string& model_dir) {
  bool any = false;
  for (const auto& n : graph.node()) any = any || n.op_type() == "SplitToSequence";
  if (!any) return Status::Ok();
  return Lowering(graph, model_dir).Run();
}

}  // namespace amptrain::importer::detail
