// The op table as data: one OpSchema per OpKind, generated from ir/ops.def.
//
// Canonical IR form: the importer rewrites older-opset encodings into the
// newest one (opset 18+: ReduceMean/ReduceSum/Squeeze/Unsqueeze axes, Split
// sizes, Clip min/max, Dropout ratio, Pad pads are *inputs*, not attributes),
// so shape rules and kernels see a single form; the exporter converts back
// when writing an older opset.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ir/attribute.h"
#include "ir/shape.h"
#include "ir/status.h"

namespace amptrain::ir {

inline constexpr uint32_t kAllInputs = 0xffffffffu;
inline constexpr int64_t kMaxPropagatedElements = 4096;

enum class OpKind : uint16_t {
#define OP(kind, onnx, min_in, max_in, min_out, max_out, diff, value_in, prec, family) k##kind,
#include "ir/ops.def"
#undef OP
  kNumOps
};

// AMP precision class (PRECISION.md): allowlist, denylist, follow the widest
// float input, or not a float computation at all.
enum class PrecisionClass : uint8_t { kAllow, kDeny, kFollow, kNone };
const char* PrecisionClassName(PrecisionClass c);

class Node;

// What a shape/dtype rule sees: input types, constant input values where the
// producer is an Initializer/Constant (or the executor folded it), the node's
// attributes. It fills `outputs` (already sized to the node's output count).
//
// Value propagation: rules of the ops that shape arithmetic uses (Shape,
// Gather, Unsqueeze, Squeeze, Concat, Slice, Cast, Reshape, Add/Sub/Mul/Div,
// Equal, Where, ConstantOfShape, Range, ...) also fill `output_values[i]`
// when every input value they need is known and the result is small
// (<= kMaxPropagatedElements, integer or float). This is how the importer
// folds the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of
// older exports and how the executor specializes a graph to input shapes.
struct InferContext {
  const Node* node = nullptr;
  const Attributes* attrs = nullptr;
  std::vector<TensorType> inputs;        // dtype kUndefined for absent optional inputs
  std::vector<const Tensor*> values;     // nullptr when not known
  std::vector<TensorType> outputs;
  std::vector<Tensor> output_values;     // sized like outputs; empty Tensor = unknown
  // Integer inputs' elements as dims (ValueInfo::sym_value), nullptr when not
  // tracked; a rule sets output_sym_values[o] (sized like outputs) where it
  // can tell (ir/infer/value_util.h: KnownSyms, SetSyms).
  std::vector<const std::vector<SymInt>*> sym_values;
  std::vector<std::optional<std::vector<SymInt>>> output_sym_values;
  int opset = 0;

  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].dtype != DType::kUndefined; }
  const Tensor* value(size_t i) const { return i < values.size() ? values[i] : nullptr; }
  const std::vector<SymInt>* sym_value(size_t i) const { return i < sym_values.size() ? sym_values[i] : nullptr; }
  // Error "<op> node '<name>': <msg>".
  template <class... A> Status Error(const A&... a) const;
};

using InferFn = Status (*)(InferContext&);

struct OpSchema {
  OpKind kind;
  std::string_view name;        // "Conv"; the IR name for Input/Initializer
  std::string_view onnx_type;   // "" for IR-only kinds
  int min_inputs, max_inputs;   // max -1: variadic
  int min_outputs, max_outputs; // max -1: variadic
  uint32_t differentiable;      // bit i: input i is differentiable
  uint32_t value_inputs;        // bit i: input i's value decides the output shape
  PrecisionClass precision;
  std::string_view family;
  InferFn infer;

  bool is_value_input(size_t input) const { return input < 32 && ((value_inputs >> input) & 1u); }
  bool is_differentiable(size_t input) const {
    return input < 32 ? (differentiable >> input) & 1u : differentiable == kAllInputs;
  }
};

const OpSchema& Schema(OpKind kind);
// Lookup by ONNX op type in the default domain; nullopt when unsupported.
std::optional<OpKind> FindOnnxOp(std::string_view onnx_type);
const std::vector<const OpSchema*>& AllSchemas();

// Shape/dtype rules, one per op, defined in ir/infer/<family>.cc.
#define OP(kind, onnx, min_in, max_in, min_out, max_out, diff, value_in, prec, family) Status Infer##kind(InferContext& ctx);
#include "ir/ops.def"
#undef OP

}  // namespace amptrain::ir
