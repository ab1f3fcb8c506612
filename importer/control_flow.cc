// Control flow that shapes and constants decide, replaced by plain nodes on
// the proto before validation (detail::InlineStaticControlFlow). The IR has
// no control flow; exporters write some where the traced code did not need
// any:
// - If. PyTorch's TorchScript exporter writes one where a Python-level
//   decision depended on a size it did not keep: `x.squeeze(1)` becomes
//     c = Equal(Gather(Shape(x), 1), 1); y = If(c) {Squeeze(x, 1)} else {Identity(x)}
//   (F.local_response_norm, any squeeze of a dim whose size it lost). The If
//   becomes the nodes of the branch its condition takes.
// - Loop with a trip count M (TorchScript's nn.EmbeddingBag, a loop over a
//   static dim). It is unrolled M times: iteration i's body reads i as a
//   constant, the loop-carried values of iteration i - 1 and the outer
//   scope; the carried outputs are the last iteration's, each scan output
//   the Concat of the iterations' values along a new first axis. The body's
//   condition output must be true after every iteration but the last (the
//   loop runs its M iterations); that is checked like a condition.
// - Loop with a condition and no M (the dynamo exporter's nn.EmbeddingBag:
//   `while i < num_bags`, appending to a sequence). Its trip count is found
//   first by running the slice of the body that the condition depends on
//   (the condition and the loop-carried values it reads, such as the
//   counter i) iteration after iteration on constants, a few nodes at a
//   time; then it is unrolled like a Loop with that M. Where that slice needs
//   what does not fold, one iteration per round, followed by a Loop of the
//   same body that goes on from the iteration's outputs; the next round
//   decides its condition. A sequence built this way becomes tensors
//   afterwards (LowerStaticSequences).
// Conditions and trip counts are decided by importing the nodes they depend
// on (the same rules and folding as the model itself); each round decides
// every construct not behind another one, so nested ones are decided one
// level at a time. A branch or body is copied with its names made unique
// (prefix "<node>/then/", "<node>/iter<i>/") and one Identity per output
// carries the node's output names. What the data decides is refused, naming
// the node and the reason.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "importer/import_internal.h"
#include "importer/tensor_proto.h"
#include "ir/onnx_dtype.h"
#include "ir/status.h"

namespace amptrain::importer::detail {

namespace {

bool IsIf(const onnx::NodeProto& n) { return n.op_type() == "If" && IsDefaultDomain(n.domain()); }
bool IsLoop(const onnx::NodeProto& n) { return n.op_type() == "Loop" && IsDefaultDomain(n.domain()); }

bool HasSubgraph(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute())
    if (a.has_g() || a.graphs_size() > 0) return true;
  return false;
}

const onnx::GraphProto* GraphAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name && a.has_g()) return &a.g();
  return nullptr;
}

// Float initializers above this many elements enter a probe as typed graph
// inputs instead of copies: their shapes decide conditions, their values
// never do (the import keeps float initializers unfolded).
constexpr int64_t kProbeCopyLimit = 4096;
// The most iterations a Loop is unrolled to, and the most nodes that
// unrolling adds to a model (an input of a few KB must not make a graph of
// millions of nodes).
constexpr int64_t kMaxUnroll = 4096, kMaxUnrolledNodes = int64_t{1} << 17;
// A Loop without a trip count whose condition slice cannot be run on
// constants (ConditionSlice) is unrolled an iteration per round (each decides
// the next condition), so it gets fewer.
constexpr int64_t kMaxWhileIterations = 256;
// The work of running a condition slice (Inliner::TripCount), in nodes plus
// probe bytes / 256 per iteration summed over the iterations, before it
// gives up and leaves the loop to the round-by-round unrolling: a few
// hundred ms, so that a crafted body cannot stall the import.
constexpr int64_t kMaxSliceWork = int64_t{1} << 20;

int64_t Elements(const onnx::TensorProto& t) {  // saturating; validation checks the dims later
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d <= 0) return 0;
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

// Replaces references to renamed values inside `g`, a subgraph nested in a
// copied branch or body; its own definitions shadow outer names.
void RenameNested(onnx::GraphProto& g, std::unordered_map<std::string, std::string> renamed) {
  for (const auto& v : g.input()) renamed.erase(v.name());
  for (const auto& t : g.initializer()) renamed.erase(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) renamed.erase(o);
  if (renamed.empty()) return;
  for (auto& n : *g.mutable_node()) {
    for (auto& in : *n.mutable_input())
      if (auto it = renamed.find(in); it != renamed.end()) in = it->second;
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) RenameNested(*a.mutable_g(), renamed);
      for (auto& sub : *a.mutable_graphs()) RenameNested(sub, renamed);
    }
  }
  for (auto& out : *g.mutable_output())
    if (auto it = renamed.find(out.name()); it != renamed.end()) out.set_name(it->second);
}

// A value that must be known at import: an If's condition, a Loop's trip
// count or initial condition, or a body's condition after an iteration.
struct Question {
  std::string value;
  std::string what;        // "the condition of If node 'x'"
  bool must_hold = false;  // a body's condition: true, or the loop ends early
};

// The part of a while-loop's body that its condition depends on: the body
// nodes, the loop-carried values they read (each of which brings in the
// body's next value of it) and the enclosing graph's values. Run on
// constants iteration after iteration, it gives the trip count without
// unrolling the rest of the body (Inliner::TripCount).
struct ConditionSlice {
  std::vector<int> nodes;          // body node indices, in body order
  std::vector<int> carried;        // k of each loop-carried value read (body input 2 + k), ascending
  std::vector<std::string> outer;  // values of the enclosing graph, sorted
};

// The condition slice of `body`, a Loop body with `carried` loop-carried
// values (CheckLoop checked its inputs and outputs); nullopt where a node of
// the slice has a subgraph of its own.
std::optional<ConditionSlice> SliceOfCondition(const onnx::GraphProto& body, int carried) {
  std::unordered_map<std::string, int> producer, carried_at;
  for (int i = 0; i < body.node_size(); ++i)
    for (const auto& o : body.node(i).output())
      if (!o.empty()) producer[o] = i;
  for (int k = 0; k < carried; ++k) carried_at[body.input(2 + k).name()] = k;
  std::unordered_set<std::string> locals{body.input(0).name(), body.input(1).name()};
  for (const auto& t : body.initializer()) locals.insert(t.name());
  std::vector<bool> in_slice(static_cast<size_t>(body.node_size()), false);
  std::vector<bool> read(static_cast<size_t>(carried), false);
  std::unordered_set<std::string> seen, outer;
  std::vector<std::string> stack{body.output(0).name()};
  while (!stack.empty()) {
    std::string v = std::move(stack.back());
    stack.pop_back();
    if (v.empty() || !seen.insert(v).second) continue;
    if (auto it = producer.find(v); it != producer.end()) {
      const onnx::NodeProto& n = body.node(it->second);
      if (HasSubgraph(n)) return std::nullopt;
      in_slice[static_cast<size_t>(it->second)] = true;
      for (const auto& in : n.input()) stack.push_back(in);
    } else if (auto c = carried_at.find(v); c != carried_at.end()) {
      read[static_cast<size_t>(c->second)] = true;
      stack.push_back(body.output(1 + c->second).name());
    } else if (!locals.count(v)) {
      outer.insert(v);
    }
  }
  ConditionSlice slice;
  for (int i = 0; i < body.node_size(); ++i)
    if (in_slice[static_cast<size_t>(i)]) slice.nodes.push_back(i);
  for (int k = 0; k < carried; ++k)
    if (read[static_cast<size_t>(k)]) slice.carried.push_back(k);
  slice.outer.assign(outer.begin(), outer.end());
  std::sort(slice.outer.begin(), slice.outer.end());
  return slice;
}

// What the nodes of one round's graph depend on.
class Ancestry {
 public:
  explicit Ancestry(const onnx::GraphProto& g) : g_(g), state_(static_cast<size_t>(g.node_size()), kUnseen) {
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& o : g.node(i).output())
        if (!o.empty()) producer_[o] = i;
  }

  // Whether `value` depends on a node with a subgraph (a construct decided
  // in a later round, or a Scan). Each node is looked at once per round, so
  // asking for every construct of an unrolled loop costs one pass.
  bool Blocked(const std::string& value) {
    auto root = producer_.find(value);
    if (root == producer_.end()) return false;
    std::vector<std::pair<int, int>> stack{{root->second, 0}};  // node, its next input
    while (!stack.empty()) {
      const int i = stack.back().first;
      const int next = stack.back().second++;
      const onnx::NodeProto& n = g_.node(i);
      State& state = state_[static_cast<size_t>(i)];
      if (next == 0) {
        if (state != kUnseen) {
          stack.pop_back();
          continue;
        }
        state = kOpen;  // a cycle (refused by validation later) reads as clear
      }
      if (next < n.input_size()) {
        auto p = producer_.find(n.input(next));
        if (p != producer_.end() && state_[static_cast<size_t>(p->second)] == kUnseen) stack.push_back({p->second, 0});
        continue;
      }
      bool blocked = HasSubgraph(n);
      for (const auto& in : n.input()) {
        auto p = producer_.find(in);
        blocked = blocked || (p != producer_.end() && state_[static_cast<size_t>(p->second)] == kBlocked);
      }
      state = blocked ? kBlocked : kClear;
      stack.pop_back();
    }
    return state_[static_cast<size_t>(root->second)] == kBlocked;
  }

  // Marks the nodes `value` depends on, stopping at those already marked.
  void Mark(const std::string& value, std::vector<bool>& mark) const {
    std::vector<std::string> stack{value};
    while (!stack.empty()) {
      std::string v = std::move(stack.back());
      stack.pop_back();
      auto it = producer_.find(v);
      if (it == producer_.end() || mark[static_cast<size_t>(it->second)]) continue;
      mark[static_cast<size_t>(it->second)] = true;
      for (const auto& in : g_.node(it->second).input())
        if (!in.empty()) stack.push_back(in);
    }
  }

 private:
  enum State : int8_t { kUnseen, kOpen, kClear, kBlocked };
  const onnx::GraphProto& g_;
  std::unordered_map<std::string, int> producer_;
  std::vector<State> state_;
};

class Inliner {
 public:
  Inliner(onnx::ModelProto& model, const ConstantEvaluator& evaluate)
      : model_(model), evaluate_(evaluate), edit_(*model.mutable_graph()) {}

  Status Run() {
    for (;;) {
      onnx::GraphProto& g = *model_.mutable_graph();
      Ancestry ancestry(g);
      // The constructs whose questions no other construct stands behind.
      std::vector<int> ready;
      std::vector<Question> asked;
      std::vector<bool> ancestor(static_cast<size_t>(g.node_size()), false);
      bool any = false;
      // A while-loop's condition slice and the values it starts from, asked
      // on the side: where they do not fold (or their probe fails), the loop
      // goes on an iteration per round.
      std::unordered_map<int, ConditionSlice> slices;
      std::vector<Question> hints;
      std::vector<bool> hinted(static_cast<size_t>(g.node_size()), false);
      auto ask_slice = [&](const onnx::NodeProto& n, int i) {
        std::optional<ConditionSlice> slice = SliceOfCondition(*GraphAttr(n, "body"), n.input_size() - 2);
        if (!slice) return;
        const std::string what = StrCat("a value the condition of ", Label(n, i), " reads");
        std::vector<Question> qs;
        for (const std::string& v : slice->outer) qs.push_back({v, what});
        for (int k : slice->carried) qs.push_back({n.input(2 + k), what});
        for (const Question& q : qs)
          if (q.value.empty() || ancestry.Blocked(q.value)) return;
        for (const Question& q : qs) ancestry.Mark(q.value, hinted);
        hints.insert(hints.end(), qs.begin(), qs.end());
        slices.emplace(i, std::move(*slice));
      };
      auto askable = [&](const std::vector<Question>& qs) {
        for (const Question& q : qs)
          if (ancestry.Blocked(q.value)) return false;
        for (const Question& q : qs) ancestry.Mark(q.value, ancestor);
        asked.insert(asked.end(), qs.begin(), qs.end());
        return true;
      };
      for (int i = 0; i < g.node_size(); ++i) {
        const onnx::NodeProto& n = g.node(i);
        if (!IsIf(n) && !IsLoop(n)) continue;
        any = true;
        AMP_ASSIGN_OR_RETURN(std::vector<Question> qs, IsIf(n) ? CheckIf(n, i) : CheckLoop(n, i));
        if (!askable(qs)) continue;
        ready.push_back(i);
        if (IsLoop(n) && n.input(0).empty()) ask_slice(n, i);
      }
      std::vector<Question> waiting;
      for (Question& q : assertions_) {
        any = true;
        if (!askable({q})) waiting.push_back(std::move(q));
      }
      assertions_ = std::move(waiting);
      if (!any) return Status::Ok();
      if (ready.empty() && asked.empty())
        return Unimplemented("every If and Loop depends on a Scan or another construct amptrain does not import");
      AMP_ASSIGN_OR_RETURN(std::vector<std::optional<ir::Tensor>> values, Decide(g, asked, ancestor));
      std::unordered_map<std::string, const ir::Tensor*> known;
      for (size_t k = 0; k < asked.size(); ++k)
        if (values[k]) known[asked[k].value] = &*values[k];
      std::vector<std::optional<ir::Tensor>> hint_values;
      if (!hints.empty()) {
        auto decided = Decide(g, hints, hinted);
        if (decided.ok()) hint_values = std::move(*decided);
      }
      for (size_t k = 0; k < hint_values.size(); ++k)
        if (hint_values[k]) known.emplace(hints[k].value, &*hint_values[k]);
      for (const Question& q : asked) {
        if (!q.must_hold) continue;
        AMP_ASSIGN_OR_RETURN(bool v, Bool(known, q));
        if (!v) return Unimplemented(q.what, " is false: the loop ends before its trip count, which amptrain cannot unroll");
      }
      std::unordered_map<int, std::vector<onnx::NodeProto>> replaced;
      for (int i : ready) {
        std::vector<onnx::NodeProto>& added = replaced[i];
        if (IsIf(g.node(i))) {
          AMP_ASSIGN_OR_RETURN(bool taken, Bool(known, IfQuestion(g.node(i), i)));
          AMP_RETURN_IF_ERROR(InlineIf(i, taken, added));
        } else {
          auto slice = slices.find(i);
          AMP_RETURN_IF_ERROR(UnrollLoop(i, known, slice == slices.end() ? nullptr : &slice->second, added));
        }
      }
      Splice(replaced);
    }
  }

 private:
  static std::string Label(const onnx::NodeProto& n, int index) {
    return StrCat(n.op_type(), " ", NodeLabel(n, index));
  }

  static Question IfQuestion(const onnx::NodeProto& n, int index) {
    return {n.input(0), StrCat("the condition of ", Label(n, index))};
  }

  // The If's own shape: one condition, two branch graphs with one output per
  // node output. Its question: the condition.
  static StatusOr<std::vector<Question>> CheckIf(const onnx::NodeProto& n, int index) {
    const std::string label = Label(n, index);
    if (n.input_size() != 1 || n.input(0).empty())
      return InvalidArgument(label, " has ", n.input_size(), " inputs, expected 1 (the condition)");
    for (const char* name : {"then_branch", "else_branch"}) {
      const onnx::GraphProto* branch = GraphAttr(n, name);
      if (!branch) return InvalidArgument(label, " has no ", name, " graph");
      if (branch->output_size() != n.output_size())
        return InvalidArgument(label, ": its ", name, " has ", branch->output_size(), " outputs, the node ",
                               n.output_size());
      if (branch->sparse_initializer_size() > 0) return Unimplemented(label, ": its ", name, " has sparse initializers");
    }
    return std::vector<Question>{IfQuestion(n, index)};
  }

  // Loop(M, cond, v...) with body (i, cond_in, v_in...) -> (cond_out, v_out...,
  // scans...): N carried values, K scan outputs. Its questions: M and, when
  // given, the initial condition.
  static StatusOr<std::vector<Question>> CheckLoop(const onnx::NodeProto& n, int index) {
    const std::string label = Label(n, index);
    const onnx::GraphProto* body = GraphAttr(n, "body");
    if (!body) return InvalidArgument(label, " has no body graph");
    if (n.input_size() < 2) return InvalidArgument(label, " has ", n.input_size(), " inputs, expected M, cond, v...");
    const int carried = n.input_size() - 2;
    if (body->input_size() != 2 + carried)
      return InvalidArgument(label, ": its body has ", body->input_size(), " inputs, expected ", 2 + carried,
                             " (iteration, condition and the ", carried, " loop-carried values)");
    if (body->output_size() != 1 + n.output_size() || n.output_size() < carried)
      return InvalidArgument(label, ": its body has ", body->output_size(), " outputs and the node ", n.output_size(),
                             ", expected the condition, ", carried, " loop-carried values and the scan outputs");
    if (body->sparse_initializer_size() > 0) return Unimplemented(label, ": its body has sparse initializers");
    if (n.input(0).empty() && n.input(1).empty())
      return Unimplemented(label, " has neither a trip count M nor a condition: it never ends");
    std::vector<Question> qs;
    if (!n.input(0).empty()) qs.push_back({n.input(0), StrCat("the trip count M of ", label)});
    if (!n.input(1).empty()) qs.push_back({n.input(1), StrCat("the condition of ", label)});
    return qs;
  }

  static StatusOr<bool> Bool(const std::unordered_map<std::string, const ir::Tensor*>& known, const Question& q) {
    auto it = known.find(q.value);
    if (it == known.end())
      return Unimplemented(q.what, " ('", q.value, "') depends on the input data, and amptrain has no control flow; "
                           "it imports If and Loop only where shapes and constants decide them (export with static "
                           "shapes, or without the data-dependent branch)");
    if (it->second->dtype() != ir::DType::kBool || it->second->num_elements() != 1)
      return InvalidArgument(q.what, " is not one bool");
    return it->second->GetAsInt64(0) != 0;
  }

  // The values `asked`, from a model of the nodes marked in `ancestor`;
  // nullopt where the import cannot fold one to a constant.
  StatusOr<std::vector<std::optional<ir::Tensor>>> Decide(const onnx::GraphProto& g, const std::vector<Question>& asked,
                                                          const std::vector<bool>& ancestor) {
    onnx::ModelProto probe;
    probe.set_ir_version(model_.ir_version());
    *probe.mutable_opset_import() = model_.opset_import();
    onnx::GraphProto& pg = *probe.mutable_graph();
    pg.set_name(g.name());
    std::unordered_set<std::string> used;
    for (int i = 0; i < g.node_size(); ++i)
      if (ancestor[static_cast<size_t>(i)]) {
        *pg.add_node() = g.node(i);
        for (const auto& in : g.node(i).input()) used.insert(in);
      }
    for (const Question& q : asked) used.insert(q.value);
    for (const auto& v : g.input())
      if (used.count(v.name())) *pg.add_input() = v;
    for (const auto& t : g.initializer()) {
      if (!used.count(t.name())) continue;
      if (!ir::IsFloat(ir::DTypeFromOnnx(t.data_type())) || Elements(t) <= kProbeCopyLimit) {
        *pg.add_initializer() = t;
        continue;
      }
      onnx::ValueInfoProto* in = pg.add_input();
      in->set_name(t.name());
      auto* tensor = in->mutable_type()->mutable_tensor_type();
      tensor->set_elem_type(t.data_type());
      for (int64_t d : t.dims()) tensor->mutable_shape()->add_dim()->set_dim_value(d);
    }
    std::unordered_set<std::string> outputs;
    for (const Question& q : asked)
      if (outputs.insert(q.value).second) pg.add_output()->set_name(q.value);
    auto decided = evaluate_(probe);
    if (!decided.ok()) return decided.status().WithContext(StrCat("deciding ", asked.front().what));
    if (decided->size() != outputs.size())
      return Internal("the control-flow probe gave ", decided->size(), " values for ", outputs.size());
    std::unordered_map<std::string, size_t> at;
    for (int k = 0; k < pg.output_size(); ++k) at[pg.output(k).name()] = static_cast<size_t>(k);
    std::vector<std::optional<ir::Tensor>> out;
    for (const Question& q : asked) out.push_back((*decided)[at.at(q.value)]);
    return out;
  }

  // Copies `sub`'s nodes and initializers into the graph with names under
  // `prefix`; `bound` names its graph inputs' values (the iteration, the
  // carried values). Returns the new names of its outputs.
  StatusOr<std::vector<std::string>> CopySubgraph(const onnx::GraphProto& sub, const std::string& prefix,
                                                  const std::unordered_map<std::string, std::string>& bound,
                                                  std::vector<onnx::NodeProto>& added) {
    onnx::GraphProto& g = *model_.mutable_graph();
    std::unordered_map<std::string, std::string> renamed = bound;
    for (const auto& t : sub.initializer()) renamed[t.name()] = edit_.Fresh(prefix + t.name());
    for (const auto& n : sub.node())
      for (const auto& o : n.output())
        if (!o.empty()) renamed[o] = edit_.Fresh(prefix + o);
    auto rename = [&](const std::string& v) {
      auto it = renamed.find(v);
      return it == renamed.end() ? v : it->second;
    };
    for (const auto& t : sub.initializer()) {
      onnx::TensorProto* copy = g.add_initializer();
      *copy = t;
      copy->set_name(renamed.at(t.name()));
    }
    for (const auto& sn : sub.node()) {
      onnx::NodeProto n = sn;
      n.set_name(edit_.Fresh(prefix + (sn.name().empty() ? sn.op_type() : sn.name())));
      for (auto& in : *n.mutable_input())
        if (!in.empty()) in = rename(in);
      for (auto& out : *n.mutable_output())
        if (!out.empty()) out = renamed.at(out);
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) RenameNested(*a.mutable_g(), renamed);
        for (auto& s : *a.mutable_graphs()) RenameNested(s, renamed);
      }
      added.push_back(std::move(n));
    }
    std::vector<std::string> outputs;
    for (const auto& o : sub.output()) outputs.push_back(rename(o.name()));
    return outputs;
  }

  onnx::NodeProto Node(const std::string& op, std::vector<std::string> inputs, const std::string& output,
                       const std::string& name) {
    onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name(edit_.Fresh(name));
    for (auto& in : inputs) n.add_input(std::move(in));
    n.add_output(output);
    return n;
  }

  // Each node of `replaced` gives way to its nodes, in its place.
  void Splice(std::unordered_map<int, std::vector<onnx::NodeProto>>& replaced) {
    onnx::GraphProto& g = *model_.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (int i = 0; i < g.node_size(); ++i) {
      auto it = replaced.find(i);
      if (it == replaced.end()) {
        *nodes.Add() = std::move(*g.mutable_node(i));
        continue;
      }
      for (auto& n : it->second) *nodes.Add() = std::move(n);
    }
    g.mutable_node()->Swap(&nodes);
  }

  // If node `index` gives way to the branch `taken` selects.
  Status InlineIf(int index, bool taken, std::vector<onnx::NodeProto>& added) {
    const onnx::NodeProto& node = model_.graph().node(index);
    const onnx::GraphProto* branch = GraphAttr(node, taken ? "then_branch" : "else_branch");
    const std::string prefix = StrCat(node.name().empty() ? StrCat("If_", index) : node.name(), "/",
                                      taken ? "then" : "else", "/");
    AMP_ASSIGN_OR_RETURN(std::vector<std::string> outs, CopySubgraph(*branch, prefix, {}, added));
    for (int k = 0; k < node.output_size(); ++k)
      if (!node.output(k).empty())
        added.push_back(Node("Identity", {outs[static_cast<size_t>(k)]}, node.output(k), StrCat(prefix, "output_", k)));
    return Status::Ok();
  }

  // The iterations while-loop `node` runs from iteration `done` on, found
  // by running its condition slice on constants: the carried values it
  // reads start from `known` (the node's inputs), the outer values it reads
  // come from `known`. nullopt where one of them is not known, or an
  // iteration's values do not fold; an error when the condition still holds
  // after kMaxUnroll iterations.
  StatusOr<std::optional<int64_t>> TripCount(const onnx::NodeProto& node, const ConditionSlice& slice,
                                             const std::unordered_map<std::string, const ir::Tensor*>& known,
                                             int64_t done, const std::string& label) {
    const std::optional<int64_t> unknown;  // what does not fold: the round-by-round unrolling decides
    const onnx::GraphProto& body = *GraphAttr(node, "body");
    onnx::ModelProto probe;
    probe.set_ir_version(model_.ir_version());
    *probe.mutable_opset_import() = model_.opset_import();
    onnx::GraphProto& pg = *probe.mutable_graph();
    pg.set_name("trip_count");
    for (const std::string& v : slice.outer) {
      auto it = known.find(v);
      if (it == known.end()) return unknown;
      TensorToProto(*it->second, v, pg.add_initializer());
    }
    std::vector<ir::Tensor> state;  // per slice.carried
    for (int k : slice.carried) {
      auto it = known.find(node.input(2 + k));
      if (it == known.end()) return unknown;
      state.push_back(*it->second);
    }
    std::unordered_set<std::string> produced, read;
    for (int i : slice.nodes) {
      *pg.add_node() = body.node(i);
      for (const auto& o : body.node(i).output()) produced.insert(o);
      for (const auto& in : body.node(i).input()) read.insert(in);
    }
    read.insert(body.output(0).name());
    for (int k : slice.carried) read.insert(body.output(1 + k).name());
    for (const auto& t : body.initializer())
      if (read.count(t.name())) *pg.add_initializer() = t;
    // Outputs: the condition, then the next value of each carried value read
    // (an Identity where the body passes on a value it did not compute).
    std::vector<std::string> outs{body.output(0).name()};
    for (int k : slice.carried) outs.push_back(body.output(1 + k).name());
    for (size_t j = 0; j < outs.size(); ++j) {
      std::string name = outs[j];
      if (!produced.count(name)) {
        name = StrCat("trip_count/output_", j);
        onnx::NodeProto* id = pg.add_node();
        id->set_op_type("Identity");
        id->add_input(outs[j]);
        id->add_output(name);
      }
      pg.add_output()->set_name(name);
    }
    const int fixed = pg.initializer_size();
    ir::Tensor yes = *ir::Tensor::Zeros(ir::DType::kBool, {});
    *yes.data<bool>() = true;
    int64_t work = 0;
    for (int64_t i = done;; ++i) {
      if (i >= kMaxUnroll)
        return Unimplemented(label, " runs more than ", kMaxUnroll, " iterations, the most amptrain unrolls");
      pg.mutable_initializer()->DeleteSubrange(fixed, pg.initializer_size() - fixed);
      TensorToProto(ir::Tensor::Int64s({i}, {}), body.input(0).name(), pg.add_initializer());
      TensorToProto(yes, body.input(1).name(), pg.add_initializer());
      for (size_t j = 0; j < slice.carried.size(); ++j)
        TensorToProto(state[j], body.input(2 + slice.carried[j]).name(), pg.add_initializer());
      work += pg.node_size() + static_cast<int64_t>(probe.ByteSizeLong() / 256);
      if (work > kMaxSliceWork) return unknown;
      auto values = evaluate_(probe);
      if (!values.ok() || values->size() != outs.size()) return unknown;
      for (const auto& v : *values)
        if (!v) return unknown;
      const ir::Tensor& cond = *(*values)[0];
      if (cond.dtype() != ir::DType::kBool || cond.num_elements() != 1) return unknown;
      if (cond.GetAsInt64(0) == 0) return std::optional<int64_t>(i + 1 - done);
      for (size_t j = 0; j < state.size(); ++j) state[j] = std::move(*(*values)[1 + j]);
    }
  }

  // Loop node `index` gives way to its body: M times with a trip count M;
  // without one, as many times as its condition slice says (TripCount), or
  // else once per round while its condition holds, followed by a Loop of the
  // same body that carries on from there (progress_ keeps the count and the
  // scan rows). The last round writes the carried values and the scans (rows
  // Unsqueezed, then Concatenated) under the node's outputs.
  Status UnrollLoop(int index, const std::unordered_map<std::string, const ir::Tensor*>& known,
                    const ConditionSlice* slice, std::vector<onnx::NodeProto>& added) {
    const onnx::NodeProto& node = model_.graph().node(index);
    const std::string label = Label(node, index);
    const onnx::GraphProto& body = *GraphAttr(node, "body");
    const int carried = node.input_size() - 2, scans = node.output_size() - carried;
    Progress p;
    if (auto it = progress_.find(node.name()); it != progress_.end()) {
      p = std::move(it->second);
      progress_.erase(it);
    } else {
      p.stem = node.name().empty() ? StrCat("Loop_", index) : node.name();
      p.label = label;
      p.rows.resize(static_cast<size_t>(scans));
    }
    bool go_on = true;
    if (!node.input(1).empty()) {
      AMP_ASSIGN_OR_RETURN(go_on, Bool(known, {node.input(1), StrCat("the condition of ", p.label)}));
    }
    const bool bounded = !node.input(0).empty();
    int64_t run = go_on ? 1 : 0;  // iterations this round
    if (bounded) {
      auto trip = known.find(node.input(0));
      if (trip == known.end()) return Bool(known, {node.input(0), StrCat("the trip count M of ", label)}).status();
      if (!ir::IsInteger(trip->second->dtype()) || trip->second->num_elements() != 1)
        return InvalidArgument("the trip count M of ", label, " is not one integer");
      run = go_on ? std::max<int64_t>(trip->second->GetAsInt64(0), 0) : 0;
    }
    bool counted = false;  // a while-loop whose trip count TripCount found
    if (!bounded && go_on && slice) {
      AMP_ASSIGN_OR_RETURN(std::optional<int64_t> trips, TripCount(node, *slice, known, p.done, p.label));
      if (trips) {
        run = *trips;
        counted = true;
      }
    }
    const int64_t most = bounded || counted ? kMaxUnroll : kMaxWhileIterations;
    if (p.done + run > most)
      return Unimplemented(p.label, " runs more than ", most, " iterations, the most amptrain unrolls",
                           bounded || counted ? "" : " without a trip count");
    if (run * body.node_size() > kMaxUnrolledNodes - unrolled_)
      return Unimplemented(p.label, ": unrolling it makes more than ", kMaxUnrolledNodes, " nodes");
    unrolled_ += run * body.node_size();
    std::vector<std::string> state(node.input().begin() + 2, node.input().end());
    std::string yes, axis, cond_out;
    if (run > 0) yes = edit_.True(p.stem + "/true");
    if (run > 0 && scans > 0) axis = edit_.Ints(p.stem + "/scan_axis", {0}, false);
    for (int64_t i = p.done; i < p.done + run; ++i) {
      const std::string prefix = StrCat(p.stem, "/iter", i, "/");
      std::unordered_map<std::string, std::string> bound;
      bound[body.input(0).name()] = edit_.Ints(prefix + "iteration", {i}, true);
      bound[body.input(1).name()] = yes;
      for (int k = 0; k < carried; ++k) bound[body.input(2 + k).name()] = state[static_cast<size_t>(k)];
      AMP_ASSIGN_OR_RETURN(std::vector<std::string> outs, CopySubgraph(body, prefix, bound, added));
      cond_out = outs[0];
      if (bounded && i + 1 < p.done + run)
        assertions_.push_back({outs[0], StrCat("the condition after iteration ", i, " of ", p.label), true});
      for (int k = 0; k < carried; ++k) state[static_cast<size_t>(k)] = outs[static_cast<size_t>(1 + k)];
      for (int k = 0; k < scans; ++k) {
        std::string row = edit_.Fresh(StrCat(p.stem, "/scan_", k, "_row", i));
        added.push_back(Node("Unsqueeze", {outs[static_cast<size_t>(1 + carried + k)], axis}, row, row));
        p.rows[static_cast<size_t>(k)].push_back(std::move(row));
      }
    }
    p.done += run;
    if (!bounded && !counted && run > 0) {  // the rest of the while-loop, decided next round
      onnx::NodeProto rest = node;
      rest.set_name(edit_.Fresh(p.stem + "/rest"));
      rest.set_input(1, cond_out);
      for (int k = 0; k < carried; ++k) rest.set_input(2 + k, state[static_cast<size_t>(k)]);
      progress_[rest.name()] = std::move(p);
      added.push_back(std::move(rest));
      return Status::Ok();
    }
    for (int k = 0; k < carried; ++k)
      if (!node.output(k).empty())
        added.push_back(Node("Identity", {state[static_cast<size_t>(k)]}, node.output(k), StrCat(p.stem, "/final_", k)));
    for (int k = 0; k < scans; ++k) {
      const std::string& out = node.output(carried + k);
      if (out.empty()) continue;
      if (p.rows[static_cast<size_t>(k)].empty())
        return Unimplemented(p.label, " runs no iteration, and amptrain has no empty scan outputs");
      onnx::NodeProto concat = Node("Concat", p.rows[static_cast<size_t>(k)], out, StrCat(p.stem, "/scan_", k));
      onnx::AttributeProto* a = concat.add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(0);
      added.push_back(std::move(concat));
    }
    return Status::Ok();
  }

  onnx::ModelProto& model_;
  const ConstantEvaluator& evaluate_;
  ProtoEditor edit_;
  // A Loop without a trip count, part unrolled: where its copies go on.
  struct Progress {
    std::string stem, label;                    // of the original node
    int64_t done = 0;                           // iterations unrolled
    std::vector<std::vector<std::string>> rows; // per scan output, Unsqueezed rows
  };
  std::unordered_map<std::string, Progress> progress_;  // by the continuing Loop's name
  std::vector<Question> assertions_;  // unrolled bodies' conditions, checked in the next round
  int64_t unrolled_ = 0;               // nodes added by unrolling so far
};

}  // namespace

Status InlineStaticControlFlow(onnx::ModelProto& model, const ConstantEvaluator& evaluate) {
  if (!model.has_graph()) return Status::Ok();
  bool any = false;
  for (const auto& n : model.graph().node()) any = any || IsIf(n) || IsLoop(n);
  if (!any) return Status::Ok();
  return Inliner(model, evaluate).Run();
}

}  // namespace amptrain::importer::detail
