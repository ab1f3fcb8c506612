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

// Constant also propagates its (small) value.
Status InferConstant(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(InferInitializer(ctx));
  const Tensor& t = std::get<Tensor>(ctx.attrs->all().at("value"));
  if (!ctx.output_values.empty() && t.num_elements() <= kMaxPropagatedElements) ctx.output_values[0] = t;
  return Status::Ok();
}

}  // namespace amptrain::ir
