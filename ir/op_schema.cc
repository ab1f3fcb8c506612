#include "ir/op_schema.h"

#include <array>

#include "ir/graph.h"

namespace amptrain::ir {

namespace {

constexpr PrecisionClass Allow = PrecisionClass::kAllow;
constexpr PrecisionClass Deny = PrecisionClass::kDeny;
constexpr PrecisionClass Follow = PrecisionClass::kFollow;
constexpr PrecisionClass None = PrecisionClass::kNone;

const std::array<OpSchema, static_cast<size_t>(OpKind::kNumOps)> kSchemas = {{
#define OP(kind, onnx, min_in, max_in, min_out, max_out, diff, value_in, prec, family) \
  {OpKind::k##kind, #kind, onnx, min_in, max_in, min_out, max_out, diff, value_in, prec, #family, &Infer##kind},
#include "ir/ops.def"
#undef OP
}};

}  // namespace

const char* PrecisionClassName(PrecisionClass c) {
  switch (c) {
    case PrecisionClass::kAllow: return "allow";
    case PrecisionClass::kDeny: return "deny";
    case PrecisionClass::kFollow: return "follow";
    case PrecisionClass::kNone: return "none";
  }
  return "?";
}

const OpSchema& Schema(OpKind kind) { return kSchemas[static_cast<size_t>(kind)]; }

std::optional<OpKind> FindOnnxOp(std::string_view onnx_type) {
  for (const OpSchema& s : kSchemas)
    if (!s.onnx_type.empty() && s.onnx_type == onnx_type) return s.kind;
  return std::nullopt;
}

const std::vector<const OpSchema*>& AllSchemas() {
  static const std::vector<const OpSchema*> all = [] {
    std::vector<const OpSchema*> v;
    for (const OpSchema& s : kSchemas) v.push_back(&s);
    return v;
  }();
  return all;
}

}  // namespace amptrain::ir
