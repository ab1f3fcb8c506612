// CUDA Kernel classes of the elementwise ops (launchers: elementwise.cu):
//   unary   Relu LeakyRelu Sigmoid Silu Tanh Exp Log Sqrt Neg Abs Reciprocal Erf Gelu
//           HardSigmoid HardSwish Floor Ceil Sign Sin Cos; Clip with bounds known at
//           plan time (absent, or constants: the entry declines computed ones)
//   binary  Add Sub Mul Div Max Min (two inputs, numpy broadcasting; the
//           three floats in float, int64/int32/int8/uint8 as the CPU's:
//           wrapping, Div truncating with x / 0 = 0; launchers: numeric.cu); Pow
//           (a float exponent of any of the three dtypes); Equal Less
//           Greater (bool output; fp32/fp16/bf16 in float, int64/int32/
//           int8/uint8 exactly, bool for Equal, as its bytes); Mod (fmod
//           0/1; the three floats in float, the integers as the CPU's
//           Remainder: x mod 0 = 0; launchers: numeric.cu)
//   Not     bool
//   grads   ReluGrad(dY, Y), TanhGrad(dY, Y), SigmoidGrad(dY, Y), GeluGrad(dY, X), SiluGrad(dY, X), UnaryGrad(dY, X) of Erf and HardSwish (one shape)
//   Cast between fp32, fp16 and bf16 (elementwise.cu), and between any two of
//           those, float64, int64, int32, int8, uint8 and bool with
//           kernels/cpu/cast.cc's rules, bit for bit (numeric.cu); Identity.
// Contracts as the CPU reference kernels' (kernels/cpu/unary.cc, binary.cc,
// grad_misc.cc, cast.cc): output 0 has the inferred type, may overwrite input 0.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cuda/common.h"

namespace amptrain::kernels::cuda {

Status CheckDTypes(const KernelInit& init, DType t, const std::vector<size_t>& inputs,
                   const std::vector<size_t>& outputs) {
  for (size_t i : inputs)
    if (i < init.inputs.size() && init.inputs[i].present() && init.inputs[i].dtype != t)
      return init.Error("input ", i, " is ", ir::DTypeName(init.inputs[i].dtype), ", expected ", ir::DTypeName(t));
  for (size_t i : outputs)
    if (i < init.outputs.size() && init.outputs[i].present() && init.outputs[i].dtype != t)
      return init.Error("output ", i, " is ", ir::DTypeName(init.outputs[i].dtype), ", expected ", ir::DTypeName(t));
  return Status::Ok();
}

bool BroadcastsTo(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  if (in.size() > out.size()) return false;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t o = out[out.size() - in.size() + d];
    if (in[d] != o && in[d] != 1) return false;
  }
  return true;
}

void BroadcastStrides(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int64_t* strides) {
  const size_t lead = out.size() - in.size();
  int64_t stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t dim = d >= lead ? in[d - lead] : 1;
    strides[d] = dim == 1 && out[d] != 1 ? 0 : stride;
    stride *= dim;
  }
}

StatusOr<std::optional<Broadcast>> PlanBroadcast(const KernelInit& init, const std::vector<size_t>& operands) {
  const std::vector<int64_t>& out = init.outputs[0].dims;
  bool same = true;
  for (size_t i : operands) same = same && init.inputs[i].dims == out;
  if (same) return std::optional<Broadcast>();
  if (out.size() > static_cast<size_t>(kMaxRank)) return init.Error("rank ", out.size(), " is over ", kMaxRank);
  Broadcast b;
  b.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) b.out_dims[d] = out[d];
  int64_t* strides[] = {b.a_strides, b.b_strides, b.c_strides};
  for (size_t k = 0; k < operands.size() && k < 3; ++k) {
    const std::vector<int64_t>& in = init.inputs[operands[k]].dims;
    if (!BroadcastsTo(in, out)) return init.Error("input ", operands[k], " does not broadcast to the output");
    BroadcastStrides(in, out, strides[k]);
  }
  return std::optional<Broadcast>(b);
}

namespace {

// Gelu's approximate attribute: true for "tanh", false for "none".
StatusOr<bool> GeluTanh(const KernelInit& init) {
  StatusOr<std::string> attr = init.attrs->GetString("approximate", "none");
  if (!attr.ok()) return attr.status();
  const std::string& approximate = *attr;
  if (approximate != "none" && approximate != "tanh") return init.Error("unsupported approximate='", approximate, "'");
  return approximate == "tanh";
}

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(UnaryOp op, Elem t, float alpha, float beta) : op_(op), t_(t), alpha_(alpha), beta_(beta) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchUnary(op_, t_, ctx.inputs[0].data, ctx.outputs[0].data, ctx.outputs[0].num_elements(), alpha_,
                           beta_, StreamOf(ctx)));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  UnaryOp op_;
  Elem t_;
  float alpha_, beta_;
};

// Whether Clip's bound input i is absent or known at plan time.
bool BoundKnown(const KernelInit& init, size_t i) {
  return i >= init.inputs.size() || !init.inputs[i].present() || init.inputs[i].value != nullptr;
}

// Clip's bound input i (BoundKnown) as float, `none` when absent.
StatusOr<float> Bound(const KernelInit& init, size_t i, float none) {
  if (i >= init.inputs.size() || !init.inputs[i].present()) return none;
  const TensorSpec& b = init.inputs[i];
  if (b.dtype != init.inputs[0].dtype || b.num_elements() < 1) return init.Error("bound ", i, " must be a scalar of X's dtype");
  if (!b.value) return init.Error("bound ", i, " is not known at plan time");
  return static_cast<float>(b.value->GetAsDouble(0));
}

StatusOr<std::unique_ptr<Kernel>> MakeUnary(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, init.op == OpKind::kClip ? 3 : 1, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  if (init.outputs[0].dims != init.inputs[0].dims) return init.Error("output dims differ from the input's");
  float alpha = 0.0f, beta = 0.0f;
  UnaryOp op;
  switch (init.op) {
    case OpKind::kRelu: op = UnaryOp::kRelu; break;
    case OpKind::kLeakyRelu: {
      op = UnaryOp::kLeakyRelu;
      AMP_ASSIGN_OR_RETURN(alpha, init.attrs->GetFloat("alpha", 0.01f));
      break;
    }
    case OpKind::kSigmoid: op = UnaryOp::kSigmoid; break;
    case OpKind::kSilu: op = UnaryOp::kSilu; break;
    case OpKind::kTanh: op = UnaryOp::kTanh; break;
    case OpKind::kExp: op = UnaryOp::kExp; break;
    case OpKind::kLog: op = UnaryOp::kLog; break;
    case OpKind::kSqrt: op = UnaryOp::kSqrt; break;
    case OpKind::kNeg: op = UnaryOp::kNeg; break;
    case OpKind::kAbs: op = UnaryOp::kAbs; break;
    case OpKind::kReciprocal: op = UnaryOp::kReciprocal; break;
    case OpKind::kErf: op = UnaryOp::kErf; break;
    case OpKind::kSin: op = UnaryOp::kSin; break;
    case OpKind::kCos: op = UnaryOp::kCos; break;
    case OpKind::kGelu: {
      AMP_ASSIGN_OR_RETURN(const bool tanh, GeluTanh(init));
      op = tanh ? UnaryOp::kGeluTanh : UnaryOp::kGelu;
      break;
    }
    case OpKind::kHardSigmoid: {
      op = UnaryOp::kHardSigmoid;
      AMP_ASSIGN_OR_RETURN(alpha, init.attrs->GetFloat("alpha", 0.2f));
      AMP_ASSIGN_OR_RETURN(beta, init.attrs->GetFloat("beta", 0.5f));
      break;
    }
    case OpKind::kHardSwish: op = UnaryOp::kHardSwish; break;
    case OpKind::kFloor: op = UnaryOp::kFloor; break;
    case OpKind::kCeil: op = UnaryOp::kCeil; break;
    case OpKind::kSign: op = UnaryOp::kSign; break;
    case OpKind::kClip: {
      op = UnaryOp::kClip;
      AMP_ASSIGN_OR_RETURN(alpha, Bound(init, 1, -INFINITY));
      AMP_ASSIGN_OR_RETURN(beta, Bound(init, 2, INFINITY));
      break;
    }
    default: return Internal(init.Describe(), ": not a CUDA unary op");
  }
  return std::unique_ptr<Kernel>(std::make_unique<UnaryKernel>(op, *ElemOf(t), alpha, beta));
}

// Float inputs (fp32/fp16/bf16): every BinaryOp; integer ones (IntDTypes):
// Add, Sub, Mul, Div, Max, Min.
class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(BinaryOp op, DType t, std::optional<Broadcast> bc, bool inplace)
      : op_(op), t_(t), bc_(bc), inplace_(inplace) {}
  Status Run(KernelContext& ctx) override {
    const Broadcast* bc = bc_ ? &*bc_ : nullptr;
    const int64_t n = ctx.outputs[0].num_elements();
    if (const std::optional<Elem> e = ElemOf(t_)) {
      CUDA_CHECK(LaunchBinary(op_, *e, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data, n, bc,
                              StreamOf(ctx)));
    } else {
      CUDA_CHECK(LaunchIntBinary(op_, *AnyNumOf(t_), ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data, n,
                                 bc, StreamOf(ctx)));
    }
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 && inplace_ ? 0 : -1; }

 private:
  BinaryOp op_;
  DType t_;
  std::optional<Broadcast> bc_;  // nullopt: both inputs have the output's dims
  bool inplace_;
};

StatusOr<std::unique_ptr<Kernel>> MakeBinary(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1}, {0}));
  const std::vector<int64_t>& out = init.outputs[0].dims;
  BinaryOp op;
  bool same_shape_only = false;
  switch (init.op) {
    case OpKind::kAdd: op = BinaryOp::kAdd; break;
    case OpKind::kSub: op = BinaryOp::kSub; break;
    case OpKind::kMul: op = BinaryOp::kMul; break;
    case OpKind::kDiv: op = BinaryOp::kDiv; break;
    case OpKind::kMax: op = BinaryOp::kMax; break;
    case OpKind::kMin: op = BinaryOp::kMin; break;
    case OpKind::kReluGrad: op = BinaryOp::kReluGrad, same_shape_only = true; break;
    case OpKind::kTanhGrad: op = BinaryOp::kTanhGrad, same_shape_only = true; break;
    case OpKind::kSigmoidGrad: op = BinaryOp::kSigmoidGrad, same_shape_only = true; break;
    case OpKind::kGeluGrad: {
      AMP_ASSIGN_OR_RETURN(const bool tanh, GeluTanh(init));
      op = tanh ? BinaryOp::kGeluTanhGrad : BinaryOp::kGeluGrad;
      same_shape_only = true;
      break;
    }
    case OpKind::kSiluGrad: op = BinaryOp::kSiluGrad, same_shape_only = true; break;
    case OpKind::kUnaryGrad: {  // the fused derivatives of kernels/cpu/grad_misc.cc; Erf's (GELU) and HardSwish's here
      AMP_ASSIGN_OR_RETURN(std::string forward, init.attrs->GetString("op", ""));
      if (forward == "Erf") op = BinaryOp::kErfGrad;
      else if (forward == "HardSwish") op = BinaryOp::kHardSwishGrad;
      else return Unimplemented(init.Describe(), ": no CUDA derivative of '", forward, "'");
      same_shape_only = true;
      break;
    }
    default: return Internal(init.Describe(), ": not a CUDA binary op");
  }
  if (!ElemOf(t) && (same_shape_only || !AnyNumOf(t)))  // integers: the arithmetic ops only
    return init.Error("dtype ", ir::DTypeName(t), " is not supported");
  if (same_shape_only && (init.inputs[0].dims != out || init.inputs[1].dims != out))
    return init.Error("inputs 0 and 1 differ in shape");
  AMP_ASSIGN_OR_RETURN(const std::optional<Broadcast> bc, PlanBroadcast(init, {0, 1}));
  return std::unique_ptr<Kernel>(std::make_unique<BinaryKernel>(op, t, bc, init.inputs[0].dims == out));
}

class PowKernel final : public Kernel {
 public:
  PowKernel(Elem t, Elem te, std::optional<Broadcast> bc, bool inplace) : t_(t), te_(te), bc_(bc), inplace_(inplace) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchPow(t_, te_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data,
                         ctx.outputs[0].num_elements(), bc_ ? &*bc_ : nullptr, StreamOf(ctx)));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 && inplace_ ? 0 : -1; }

 private:
  Elem t_, te_;
  std::optional<Broadcast> bc_;  // nullopt: both inputs have the output's dims
  bool inplace_;
};

StatusOr<std::unique_ptr<Kernel>> MakePow(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const std::optional<Elem> te = ElemOf(init.inputs[1].dtype);
  if (!te) return init.Error("the exponent is ", ir::DTypeName(init.inputs[1].dtype), ", expected a float dtype");
  AMP_ASSIGN_OR_RETURN(const std::optional<Broadcast> bc, PlanBroadcast(init, {0, 1}));
  return std::unique_ptr<Kernel>(
      std::make_unique<PowKernel>(*ElemOf(t), *te, bc, init.inputs[0].dims == init.outputs[0].dims));
}

// The integer dtypes of Mod, Less, Greater and (with bool) Equal here.
std::vector<DType> IntDTypes() { return {DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8}; }

// Equal/Less/Greater on floats, integers and bools (bool: Equal only, the bytes).
class CompareKernel final : public Kernel {
 public:
  CompareKernel(CompareOp op, Num t, std::optional<Broadcast> bc) : op_(op), t_(t), bc_(bc) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchCompare(op_, t_, ctx.inputs[0].data, ctx.inputs[1].data,
                             static_cast<bool*>(ctx.outputs[0].data), ctx.outputs[0].num_elements(),
                             bc_ ? &*bc_ : nullptr, StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  CompareOp op_;
  Num t_;
  std::optional<Broadcast> bc_;  // nullopt: both inputs have the output's dims
};

// Mod(A, B), fmod 0 (the divisor's sign) or 1 (C's fmod), broadcasting.
class ModKernel final : public Kernel {
 public:
  ModKernel(Num t, bool fmod, std::optional<Broadcast> bc, bool inplace) : t_(t), fmod_(fmod), bc_(bc), inplace_(inplace) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchMod(t_, fmod_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data,
                         ctx.outputs[0].num_elements(), bc_ ? &*bc_ : nullptr, StreamOf(ctx)));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 && inplace_ ? 0 : -1; }

 private:
  Num t_;
  bool fmod_;
  std::optional<Broadcast> bc_;
  bool inplace_;
};

StatusOr<std::unique_ptr<Kernel>> MakeMod(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1}, {0}));
  const std::optional<Num> num = AnyNumOf(t);
  if (!num || t == DType::kBool) return init.Error("dtype ", ir::DTypeName(t), " is not supported");
  AMP_ASSIGN_OR_RETURN(int64_t fmod, init.attrs->GetInt("fmod", 0));
  if (fmod != 0 && fmod != 1) return init.Error("attribute fmod is ", fmod, ", expected 0 or 1");
  AMP_ASSIGN_OR_RETURN(const std::optional<Broadcast> bc, PlanBroadcast(init, {0, 1}));
  return std::unique_ptr<Kernel>(
      std::make_unique<ModKernel>(*num, fmod == 1, bc, init.inputs[0].dims == init.outputs[0].dims));
}

class NotKernel final : public Kernel {
 public:
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchNot(static_cast<const uint8_t*>(ctx.inputs[0].data), static_cast<uint8_t*>(ctx.outputs[0].data),
                         ctx.outputs[0].num_elements(), StreamOf(ctx)));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }
};

StatusOr<std::unique_ptr<Kernel>> MakeNot(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, 1));
  AMP_RETURN_IF_ERROR(CheckDTypes(init, DType::kBool, {0}, {0}));
  if (init.outputs[0].dims != init.inputs[0].dims) return init.Error("output dims differ from the input's");
  return std::unique_ptr<Kernel>(std::make_unique<NotKernel>());
}

StatusOr<std::unique_ptr<Kernel>> MakeCompare(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1}, {}));
  if (init.outputs[0].dtype != DType::kBool) return init.Error("output must be bool");
  const CompareOp op = init.op == OpKind::kEqual  ? CompareOp::kEqual
                       : init.op == OpKind::kLess ? CompareOp::kLess
                                                  : CompareOp::kGreater;
  AMP_ASSIGN_OR_RETURN(const std::optional<Broadcast> bc, PlanBroadcast(init, {0, 1}));
  const std::optional<Num> num = AnyNumOf(t);
  if (!num || (t == DType::kBool && op != CompareOp::kEqual))
    return init.Error("dtype ", ir::DTypeName(t), " is not supported");
  return std::unique_ptr<Kernel>(std::make_unique<CompareKernel>(op, *num, bc));
}

class CastKernel final : public Kernel {
 public:
  CastKernel(Elem from, Elem to) : from_(from), to_(to) {}
  Status Run(KernelContext& ctx) override {
    if (from_ == to_) return CopyInputToOutput(ctx);
    CUDA_CHECK(LaunchCast(from_, to_, ctx.inputs[0].data, ctx.outputs[0].data, ctx.outputs[0].num_elements(),
                          StreamOf(ctx)));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override {
    return output == 0 && (from_ == to_ || (from_ != Elem::kF32 && to_ != Elem::kF32)) ? 0 : -1;
  }

 private:
  Elem from_, to_;
};

// Cast's CastType of `t`, nullopt for the dtypes the CUDA Cast does not take.
std::optional<CastType> CastTypeOf(DType t) {
  switch (t) {
    case DType::kFloat32: return CastType::kF32;
    case DType::kFloat16: return CastType::kF16;
    case DType::kBFloat16: return CastType::kBF16;
    case DType::kFloat64: return CastType::kF64;
    case DType::kInt64: return CastType::kI64;
    case DType::kInt32: return CastType::kI32;
    case DType::kInt8: return CastType::kI8;
    case DType::kUInt8: return CastType::kU8;
    case DType::kBool: return CastType::kBool;
    default: return std::nullopt;
  }
}

// The dtypes of CastTypeOf: Cast's source dtypes on CUDA.
std::vector<DType> CastDTypes() {
  return {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
          DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool};
}

// A Cast with float64, an integer or bool on either side (LaunchCastAny).
class CastAnyKernel final : public Kernel {
 public:
  CastAnyKernel(CastType from, CastType to, bool same_size) : from_(from), to_(to), same_size_(same_size) {}
  Status Run(KernelContext& ctx) override {
    if (from_ == to_) return CopyInputToOutput(ctx);
    CUDA_CHECK(LaunchCastAny(from_, to_, ctx.inputs[0].data, ctx.outputs[0].data, ctx.outputs[0].num_elements(),
                             StreamOf(ctx)));
    return Status::Ok();
  }
  // Each thread reads its element before writing it: in place when the sizes agree, as the CPU.
  int inplace_input(size_t output) const override { return output == 0 && same_size_ ? 0 : -1; }

 private:
  CastType from_, to_;
  bool same_size_;
};

StatusOr<std::unique_ptr<Kernel>> MakeCast(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, 1));
  if (init.outputs[0].dims != init.inputs[0].dims) return init.Error("output dims differ from the input's");
  const DType from_t = init.inputs[0].dtype, to_t = init.outputs[0].dtype;
  const std::optional<Elem> from = ElemOf(from_t), to = ElemOf(to_t);
  if (from && to) return std::unique_ptr<Kernel>(std::make_unique<CastKernel>(*from, *to));
  const std::optional<CastType> any_from = CastTypeOf(from_t), any_to = CastTypeOf(to_t);
  if (!any_from || !any_to)
    return Unimplemented(init.Describe(), ": the CUDA Cast takes float32, float16, bfloat16, float64, int64, int32, "
                         "int8, uint8 and bool, not ", ir::DTypeName(any_from ? to_t : from_t));
  return std::unique_ptr<Kernel>(
      std::make_unique<CastAnyKernel>(*any_from, *any_to, ir::DTypeSize(from_t) == ir::DTypeSize(to_t)));
}

class IdentityKernel final : public Kernel {
 public:
  Status Run(KernelContext& ctx) override { return CopyInputToOutput(ctx); }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }
};

}  // namespace

void RegisterElementwise(Registry& r) {
  for (OpKind op : {OpKind::kRelu, OpKind::kLeakyRelu, OpKind::kSigmoid, OpKind::kSilu, OpKind::kTanh, OpKind::kExp, OpKind::kLog,
                    OpKind::kSqrt, OpKind::kNeg, OpKind::kAbs, OpKind::kReciprocal, OpKind::kErf, OpKind::kGelu,
                    OpKind::kHardSigmoid, OpKind::kHardSwish, OpKind::kFloor, OpKind::kCeil, OpKind::kSign,
                    OpKind::kSin, OpKind::kCos})
    r.Add(op == OpKind::kRelu ? ElementwiseChannelsLast(CudaEntry(op, "cuda", MakeUnary), 0b1, 0b1)
                              : CudaEntry(op, "cuda", MakeUnary));
  KernelEntry clip = CudaEntry(OpKind::kClip, "cuda", MakeUnary);
  clip.accepts = [](const KernelInit& init) { return BoundKnown(init, 1) && BoundKnown(init, 2); };
  r.Add(std::move(clip));
  for (OpKind op : {OpKind::kEqual, OpKind::kLess, OpKind::kGreater}) {
    r.Add(CudaEntry(op, "cuda", MakeCompare));
    std::vector<DType> ints = IntDTypes();
    if (op == OpKind::kEqual) ints.push_back(DType::kBool);
    r.Add(CudaEntry(op, "cuda", MakeCompare, 10, ints));
  }
  std::vector<DType> mod_types = CudaFloatDTypes();
  for (DType t : IntDTypes()) mod_types.push_back(t);
  r.Add(CudaEntry(OpKind::kMod, "cuda", MakeMod, 10, mod_types));
  r.Add(CudaEntry(OpKind::kNot, "cuda", MakeNot, 10, {DType::kBool}));
  KernelEntry pow = CudaEntry(OpKind::kPow, "cuda", MakePow);
  pow.accepts = [](const KernelInit& init) { return init.inputs.size() == 2 && ElemOf(init.inputs[1].dtype).has_value(); };
  r.Add(std::move(pow));
  for (OpKind op : {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kMax, OpKind::kMin,
                    OpKind::kReluGrad, OpKind::kTanhGrad, OpKind::kSigmoidGrad, OpKind::kGeluGrad, OpKind::kSiluGrad,
                    OpKind::kUnaryGrad}) {
    KernelEntry e = CudaEntry(op, "cuda", MakeBinary);
    // Variadic Max/Min: the two-input form only; UnaryGrad: Erf's and HardSwish's only.
    e.accepts = [](const KernelInit& init) { return init.inputs.size() == 2 && MakeBinary(init).ok(); };
    // Add and ReluGrad, on ResNet's activations and their gradients, take
    // channels-last operands of one shape (flat: the bytes are permuted alike).
    if (op == OpKind::kAdd || op == OpKind::kReluGrad) e = ElementwiseChannelsLast(std::move(e), 0b11, 0b1);
    r.Add(std::move(e));
  }
  // The integer ones: index arithmetic (ReverseSequence's lengths, TensorScatter's positions).
  for (OpKind op : {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kMax, OpKind::kMin}) {
    KernelEntry e = CudaEntry(op, "cuda", MakeBinary, 10, IntDTypes());
    e.accepts = [](const KernelInit& init) { return init.inputs.size() == 2; };  // variadic Max/Min: two inputs
    r.Add(std::move(e));
  }
  // Cast: O1's fp32 activations cast for a low Conv; any pair of CastDTypes.
  KernelEntry cast = CudaEntry(OpKind::kCast, "cuda", MakeCast, 10, CastDTypes());
  cast.accepts = [](const KernelInit& init) {
    return !init.outputs.empty() && CastTypeOf(init.outputs[0].dtype).has_value();
  };
  r.Add(ElementwiseChannelsLast(std::move(cast), 0b1, 0b1));
  r.Add(CudaEntry(OpKind::kIdentity, "cuda", [](const KernelInit& init) -> StatusOr<std::unique_ptr<Kernel>> {
    AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, 1));
    if (init.outputs[0].dtype != init.inputs[0].dtype || init.outputs[0].dims != init.inputs[0].dims)
      return init.Error("output type differs from the input's");
    return std::unique_ptr<Kernel>(std::make_unique<IdentityKernel>());
  }, 10, {}));
}

}  // namespace amptrain::kernels::cuda
