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
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
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
  Lowering(onnx::GraphProto& g, const std::string& model_dir) : g_(g), model_dir_(model_dir), constants_(g) {
    for (const auto& v : g.input()) names_.insert(v.name());
    for (const auto& t : g.initializer()) names_.insert(t.name());
    for (const auto& n : g.node())
      for (const auto& o : n.output()) names_.insert(o);
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
    const std::string axes = Ints(base + "_axes", {axis});
    for (size_t k = 0; k < readers.size(); ++k) {
      onnx::NodeProto* at = g_.mutable_node(readers[k]);
      const std::string out = at->output(0);
      const bool squeeze = !has_split && keepdims == 0;
      const std::string sliced = squeeze ? Fresh(out + "_piece") : out;
      const std::string starts = Ints(base + "_start", {ranges[k].first});
      const std::string ends = Ints(base + "_end", {ranges[k].second});
      at->set_op_type("Slice");
      at->clear_input();
      for (const std::string& in : {x, starts, ends, axes}) at->add_input(in);
      at->clear_attribute();
      at->set_output(0, sliced);
      if (squeeze) {
        onnx::NodeProto* sq = g_.add_node();
        sq->set_op_type("Squeeze");
        sq->set_name(Fresh(at->name() + "_squeeze"));
        sq->add_input(sliced);
        sq->add_input(axes);
        sq->add_output(out);
      }
    }
    return true;
  }

  // A new int64 1-D initializer; its name.
  std::string Ints(const std::string& stem, const std::vector<int64_t>& values) {
    onnx::TensorProto* t = g_.add_initializer();
    t->set_name(Fresh(stem));
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return t->name();
  }

  std::string Fresh(const std::string& stem) {
    std::string name = stem;
    for (int k = 1; names_.count(name); ++k) name = stem + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  onnx::GraphProto& g_;
  const std::string& model_dir_;
  Constants constants_;
  std::unordered_set<std::string> names_, graph_outputs_;
};

}  // namespace

Status LowerSequenceSplits(onnx::GraphProto& graph, const std::string& model_dir) {
  bool any = false;
  for (const auto& n : graph.node()) any = any || n.op_type() == "SplitToSequence";
  if (!any) return Status::Ok();
  return Lowering(graph, model_dir).Run();
}

}  // namespace amptrain::importer::detail
