// Reference FusedConv (ir/ops.def): Y = act(Conv(X, W, B) + Z), run as the
// reference Conv kernel, then the reference Add (Y + Z, in place over Y),
// then the reference Relu (in place), so it computes exactly what the unfused
// nodes compute. Any float dtype, any spatial rank the Conv takes.
#include "kernels/cpu/nn_kernels.h"

namespace amptrain::kernels::cpu::nn {

namespace {

class FusedConvReference : public Kernel {
 public:
  FusedConvReference(std::unique_ptr<Kernel> conv, std::unique_ptr<Kernel> add, std::unique_ptr<Kernel> relu,
                     bool has_bias)
      : conv_(std::move(conv)), add_(std::move(add)), relu_(std::move(relu)), has_bias_(has_bias) {}

  Status Run(KernelContext& ctx) override {
    KernelContext step;
    step.inputs = {ctx.inputs[0], ctx.inputs[1]};
    if (has_bias_) step.inputs.push_back(ctx.inputs[2]);
    step.outputs = ctx.outputs;
    AMP_RETURN_IF_ERROR(conv_->Run(step));
    if (add_) {
      step.inputs = {ctx.outputs[0], ctx.inputs[3]};
      AMP_RETURN_IF_ERROR(add_->Run(step));
    }
    if (relu_) {
      step.inputs = {ctx.outputs[0]};
      AMP_RETURN_IF_ERROR(relu_->Run(step));
    }
    return Status::Ok();
  }

 private:
  std::unique_ptr<Kernel> conv_, add_, relu_;
  bool has_bias_;
};

// The init of one unfused piece: `op` on `inputs`, same outputs.
KernelInit Piece(const KernelInit& init, OpKind op, std::vector<TensorSpec> inputs) {
  KernelInit piece = init;
  piece.op = op;
  piece.inputs = std::move(inputs);
  return piece;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeFusedConvReference(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 4, 1, 1));
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 1, 4));
  AMP_ASSIGN_OR_RETURN(std::string act, init.attrs->GetString("activation", ""));
  if (act != "" && act != "Relu") return init.Error("activation '", act, "' is not supported");
  const bool has_bias = init.inputs.size() > 2 && init.inputs[2].present();
  const bool has_residual = init.inputs.size() > 3 && init.inputs[3].present();
  const TensorSpec& y = init.outputs[0];
  if (has_residual && init.inputs[3].dims != y.dims) return init.Error("residual Z must have the shape of Y");

  std::vector<TensorSpec> conv_inputs(init.inputs.begin(), init.inputs.begin() + (has_bias ? 3 : 2));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> conv, MakeConvReference(Piece(init, OpKind::kConv, conv_inputs)));
  std::unique_ptr<Kernel> add, relu;
  const Registry& registry = Registry::Global();
  if (has_residual) {
    AMP_ASSIGN_OR_RETURN(add, registry.Create(Piece(init, OpKind::kAdd, {y, init.inputs[3]}), "reference"));
  }
  if (act == "Relu") {
    AMP_ASSIGN_OR_RETURN(relu, registry.Create(Piece(init, OpKind::kRelu, {y}), "reference"));
  }
  return std::unique_ptr<Kernel>(new FusedConvReference(std::move(conv), std::move(add), std::move(relu), has_bias));
}

}  // namespace amptrain::kernels::cpu::nn
