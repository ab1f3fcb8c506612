// Internal to the importer: checks of untrusted ModelProto contents
// (import_validate.cc), shared by graph construction (import.cc).
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace amptrain::importer::detail {

// The newest IR version and default-domain opset that onnx 1.23 defines (IR
// 11-14 add element types only, which the importer names when it refuses
// them, and multi-device hints, which a single-device runtime ignores).
inline constexpr int64_t kMinIrVersion = 3, kMaxIrVersion = 14;
// Import reads opsets 7-28 (7-10 through UpgradeLegacyOps and the opset
// adapters); export writes 11-28.
inline constexpr int64_t kMinOpset = 7, kMaxOpset = 28;
inline constexpr int64_t kMinExportOpset = 11;
inline constexpr int kMaxListLength = 1 << 20;      // elements of an ints/floats/strings attribute
inline constexpr size_t kMaxNameLength = 4096;      // value, node, attribute names, dim_params
inline constexpr size_t kMaxStringLength = 1 << 16; // string attribute values
inline constexpr int kMaxRank = 64;
// Nodes, and initializers, of one graph: 16x the largest models of the
// torchvision and Hugging Face exports seen so far; autodiff then triples it.
inline constexpr int kMaxNodes = 1 << 20;

// The bytes of a file of at most 2 GiB; `what` ("model") names it in errors.
StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what);
// The folder of `path` ("." for a bare file name).
std::string ParentDir(const std::string& path);

// "node 'conv1'" or, for an unnamed node, "node #3".
std::string NodeLabel(const onnx::NodeProto& node, int index);
// The default (ONNX) domain: "" or "ai.onnx".
inline bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }
// `n`'s attribute `name`, nullptr when it has none.
inline const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
inline onnx::AttributeProto* FindAttr(onnx::NodeProto& n, const std::string& name) {
  return const_cast<onnx::AttributeProto*>(FindAttr(static_cast<const onnx::NodeProto&>(n), name));
}

// Checks the IR version and opset imports and fills the model-level fields of `info`.
Status ReadModelInfo(const onnx::ModelProto& model, ir::ModelInfo* info);

// What ValidateGraph learned.
struct GraphPlan {
  std::vector<int> order;                       // node indices, producers before consumers
  std::vector<ir::OpKind> kinds;                // per node index
  std::unordered_set<std::string> initializers; // initializer names
  std::unordered_set<std::string> names;        // every value name the graph defines
};

// Names (unique, sane, resolvable), ops (supported in `info.opset`), input and
// output counts, attribute kinds and sizes, and a cycle-free node order.
StatusOr<GraphPlan> ValidateGraph(const onnx::GraphProto& graph, const ir::ModelInfo& info);

// Each call of a model-local function (ModelProto.functions), in the graph,
// in function bodies and in subgraphs, is replaced by the function's body,
// its values renamed under the call's name and its attribute references
// bound; model.functions is then empty. A model without functions is left
// as it is (importer/inline_functions.cc).
Status InlineFunctions(onnx::ModelProto& model);

// SplitToSequence read only by SequenceAt at constant positions (dynamo's
// chunk/split) becomes Slices, in place; other sequences are left as they
// are (importer/sequence_split.cc).
Status LowerSequenceSplits(onnx::GraphProto& graph, const std::string& model_dir);

// Upsample, Resize at opset 10 and Scatter become the Resize / ScatterElements
// of opset 11 (ImageScaler a Mul and an Add; Slice, TopK and Pad take their
// integer attributes as inputs), in place, in the graph and its subgraphs
// (importer/legacy_ops.cc).
Status UpgradeLegacyOps(onnx::ModelProto& model);
// Whether `op_type` is a default-domain op that UpgradeLegacyOps renames
// (Upsample, Scatter, ImageScaler): imported, although ir/ops.def does not
// name it.
bool IsLegacyOpName(const std::string& op_type);

// Decides values that control flow needs at import: imports a model whose
// outputs they are and gives each one's value where folding made it a
// constant (nullopt elsewhere).
using ConstantEvaluator =
    std::function<StatusOr<std::vector<std::optional<ir::Tensor>>>(const onnx::ModelProto&)>;

// Each If whose condition, and each Loop whose trip count, shapes and
// constants decide is replaced, in place, by the nodes of the branch it
// takes / of its unrolled iterations; one that depends on the data is an
// error naming it (importer/control_flow.cc).
Status InlineStaticControlFlow(onnx::ModelProto& model, const ConstantEvaluator& evaluate);

// Fresh names (unique across the graph and its subgraphs) and small
// initializers, for the rewrites of the proto before validation
// (importer/proto_edit.cc).
class ProtoEditor {
 public:
  explicit ProtoEditor(onnx::GraphProto& g);
  std::string Fresh(const std::string& stem);  // stem, or stem_1, stem_2, ...
  // An int64 initializer: [values.size()], or a scalar of values[0].
  std::string Ints(const std::string& stem, const std::vector<int64_t>& values, bool scalar = false);
  std::string True(const std::string& stem);  // a bool scalar initializer, true

 private:
  void Collect(const onnx::GraphProto& g);
  onnx::GraphProto& g_;
  std::unordered_set<std::string> names_;
};

// Sequences built element by element from SequenceEmpty / SequenceConstruct
// become their elements, and their readers (SequenceAt, SequenceLength,
// ConcatFromSequence) tensor ops, in place (importer/sequence_split.cc).
Status LowerStaticSequences(onnx::GraphProto& graph, const std::string& model_dir);

// A tensor TypeProto; `what` names the value in errors.
StatusOr<ir::TensorType> TypeFromProto(const onnx::TypeProto& type, const std::string& what);

// One attribute (already checked by ValidateGraph for kind and size).
StatusOr<ir::AttrValue> AttributeFromProto(const onnx::AttributeProto& attr, const std::string& model_dir);

}  // namespace amptrain::importer::detail
