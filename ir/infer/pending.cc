// TEMPORARY during the foundation build-out: weak fallbacks so the library
// links while shape rules land family by family. Each family file defines
// strong symbols that replace these. This file is deleted once every op in
// ir/ops.def has its rule (tests/ir checks that no rule answers "pending").
#include "ir/infer/infer_util.h"

namespace amptrain::ir {

#define OP(kind, onnx, min_in, max_in, min_out, max_out, diff, prec, family) \
  __attribute__((weak)) Status Infer##kind(InferContext& ctx) {               \
    return Unimplemented(ctx.node ? ctx.node->Describe() : std::string(#kind), ": shape rule pending"); \
  }
#include "ir/ops.def"
#undef OP

}  // namespace amptrain::ir
