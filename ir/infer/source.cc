// Shape rules of the source kinds: Input, Initializer, Constant.
#include "ir/infer/infer_util.h"

namespace amptrain::ir {

// Input keeps the type the importer or builder gave it.
Status InferInput(InferContext&) { return Status::Ok(); }

Status InferInitializer(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(Tensor t, ctx.attrs->GetTensor("value"));
  ctx.outputs[0] = TensorType::Of(t.dtype(), t.dims());
  return Status::Ok();
}

Status InferConstant(InferContext& ctx) { return InferInitializer(ctx); }

}  // namespace amptrain::ir
