// Attention (opsets 23-25; PyTorch's exporter writes it for
// scaled_dot_product_attention from opset 23) lowered right after import's
// shape inference into ops amptrain trains, casts and exports:
//
//   3-D Q [B, Sq, Hq D] -> Reshape [B, Sq, Hq, D] -> Transpose [B, Hq, Sq, D]
//   (K, V likewise with kv_num_heads); past_key / past_value: Concat on the
//   sequence axis, and those are present_key / present_value;
//   grouped-query (Hq = g Hkv): K, V heads repeated g times each
//   (Unsqueeze -> Expand -> Reshape: query head h reads key head h / g);
//   scores = MatMul(Q sqrt(scale), Transpose(K sqrt(scale)))      scale: 1/sqrt(D)
//   softcap c > 0: scores = c Tanh(scores / c)
//   + bias: attn_mask (bool -> Where(mask, 0, -inf), padded on the right with
//     -inf where shorter than the keys), is_causal (key j allowed for query i
//     iff j <= i + offset), the local window (opset 25: i + offset - left <=
//     j <= i + offset + right), nonpad_kv_seqlen (keys j >= nonpad[b]
//     masked); offset = the past length, or nonpad[b] - Sq (per batch);
//   Softmax (in softmax_precision where given) -> MatMul(V)
//   -> for 3-D: Transpose -> Reshape [B, Sq, Hq Dv].
// qk_matmul_output: mode 0 / 1 the (softcapped) scores, 2 with the bias,
// 3 the probabilities. Where the bias can mask a whole row (any mask, window
// or padding), that row's probabilities are 0, not NaN (the spec's rule):
// its scores are zeroed before the Softmax, so neither the forward nor the
// gradient sees a NaN.
#include <cmath>
#include <string>
#include <vector>

#include "importer/lowering_util.h"
#include "ir/onnx_dtype.h"

namespace amptrain::importer::lowering {

namespace {

using ir::DType;
using ir::OpKind;
using ir::Value;

class AttentionLowering {
 public:
  AttentionLowering(ir::Graph& g, ir::Node* n) : g_(g), n_(n), base_(n->name()), b_(g, n->name()) {}

  Status Run() {
    const auto& a = n_->attrs();
    Value q = n_->input(0), k = n_->input(1), v = n_->input(2);
    const ir::TensorType qt = g_.type(q), kt = g_.type(k), vt = g_.type(v);  // copies: q, k, v change below
    t1_ = qt.dtype;
    t2_ = vt.dtype;
    // The keys' length with the past, where static (the new nodes below have
    // no types until shape inference reruns).
    const ir::Dim& skv = kt.shape[kt.shape.rank() == 3 ? 1 : 2];
    if (skv.is_static()) total_keys_ = skv.value;
    if (n_->has_input(4)) {
      const ir::TensorType& pt = g_.type(n_->input(4));
      total_keys_ = pt.has_shape && pt.shape.rank() == 4 && pt.shape[2].is_static() && total_keys_ >= 0
                        ? pt.shape[2].value + total_keys_
                        : -1;
    }
    const size_t rank = qt.shape.rank();
    const bool three_d = rank == 3;
    int64_t hq, hkv;
    if (three_d) {
      hq = a.Int("q_num_heads", 0), hkv = a.Int("kv_num_heads", 0);
      q = SplitHeads(q, hq, "q"), k = SplitHeads(k, hkv, "k"), v = SplitHeads(v, hkv, "v");
    } else {
      if (!qt.shape[1].is_static() || !kt.shape[1].is_static())
        return Unimplemented(n_->Describe(), ": the head counts of ", qt.shape.ToString(), " and ",
                             kt.shape.ToString(), " are not static");
      hq = qt.shape[1].value, hkv = kt.shape[1].value;
    }
    const ir::Dim& head = three_d ? qt.shape[2] : qt.shape[3];
    const ir::Dim& vhead = three_d ? vt.shape[2] : vt.shape[3];
    if (!head.is_static() || !vhead.is_static())
      return Unimplemented(n_->Describe(), ": the head sizes of ", qt.shape.ToString(), " and ", vt.shape.ToString(),
                           " are not static");
    const int64_t d = three_d ? head.value / hq : head.value, dv = three_d ? vhead.value / hkv : vhead.value;

    const bool past = n_->has_input(4);
    if (past) {
      k = Concat({n_->input(4), k}, "present_key");
      v = Concat({n_->input(5), v}, "present_value");
    }
    Value present_key = k, present_value = v;
    if (hq != hkv) k = RepeatHeads(k, hq, hkv, d, "k"), v = RepeatHeads(v, hq, hkv, dv, "v");

    const double scale = a.Has("scale") ? a.Float("scale", 0.f) : 1.0 / std::sqrt(static_cast<double>(d));
    AMP_ASSIGN_OR_RETURN(Value root, b_.Scalar(t1_, std::sqrt(scale)));
    ir::Node* kt_node = b_.Node(OpKind::kTranspose, {b_.Op(OpKind::kMul, {k, root}, "k_scaled")}, "k_transpose");
    kt_node->attrs().Set("perm", std::vector<int64_t>{0, 1, 3, 2});
    Value scores = b_.Op(OpKind::kMatMul, {b_.Op(OpKind::kMul, {q, root}, "q_scaled"), kt_node->output(0)}, "qk");
    const float softcap = a.Float("softcap", 0.f);
    if (softcap > 0) {
      AMP_ASSIGN_OR_RETURN(Value c, b_.Scalar(t1_, softcap));
      scores = b_.Op(OpKind::kMul, {b_.Op(OpKind::kTanh, {b_.Op(OpKind::kDiv, {scores, c}, "softcap_div")}, "softcap_tanh"), c},
                  "softcap");
    }
    Value qk_out = scores;

    AMP_ASSIGN_OR_RETURN(Value bias, Bias(q, k, past));
    const int64_t mode = a.Int("qk_matmul_output_mode", 0);
    Value probs_in = scores, masked_row;
    if (bias.valid()) {
      probs_in = b_.Op(OpKind::kAdd, {scores, bias}, "biased");
      if (mode == 2) qk_out = probs_in;
      if (can_mask_rows_) {
        // A row whose bias is all -inf: its scores become 0 (a finite Softmax)
        // and its probabilities 0 after.
        ir::Node* mx = b_.Node(OpKind::kReduceMax, {bias, b_.Ints({-1})}, "bias_row_max");
        mx->attrs().Set("keepdims", int64_t{1});
        AMP_ASSIGN_OR_RETURN(Value ninf, b_.Scalar(t1_, -INFINITY));
        masked_row = b_.Op(OpKind::kEqual, {mx->output(0), ninf}, "masked_row");
        AMP_ASSIGN_OR_RETURN(Value zero, b_.Scalar(t1_, 0.0));
        probs_in = b_.Op(OpKind::kWhere, {masked_row, zero, probs_in}, "row_guard");
      }
    }
    DType softmax_type = t1_;
    if (a.Has("softmax_precision")) {
      softmax_type = ir::DTypeFromOnnx(a.Int("softmax_precision", 0));
      if (!ir::IsFloat(softmax_type))
        return InvalidArgument(n_->Describe(), ": softmax_precision ", a.Int("softmax_precision", 0),
                               " is not a float type");
      if (softmax_type != t1_) probs_in = b_.Cast(probs_in, softmax_type);
    }
    ir::Node* sm = b_.Node(OpKind::kSoftmax, {probs_in}, "softmax");
    sm->attrs().Set("axis", int64_t{-1});
    Value probs = sm->output(0);
    if (masked_row.valid()) {
      AMP_ASSIGN_OR_RETURN(Value zero, b_.Scalar(softmax_type, 0.0));
      probs = b_.Op(OpKind::kWhere, {masked_row, zero, probs}, "masked_row_zero");
    }
    if (softmax_type != t1_) probs = b_.Cast(probs, t1_);
    if (mode == 3) qk_out = probs;
    if (t2_ != t1_) probs = b_.Cast(probs, t2_);
    Value y = b_.Op(OpKind::kMatMul, {probs, v}, "pv");
    if (t2_ != t1_) y = b_.Cast(y, t1_);
    if (three_d) {
      ir::Node* t = b_.Node(OpKind::kTranspose, {y}, "y_transpose");
      t->attrs().Set("perm", std::vector<int64_t>{0, 2, 1, 3});
      y = b_.Op(OpKind::kReshape, {t->output(0), b_.Ints({0, 0, -1})}, "y_merge_heads");
    }
    std::vector<Value> outs = {y, present_key, present_value, qk_out};
    outs.resize(n_->num_outputs());
    return ReplaceOutputs(g_, n_, std::move(outs));
  }

 private:
  Value Concat(std::vector<Value> parts, const std::string& what) {
    ir::Node* c = b_.Node(OpKind::kConcat, std::move(parts), what);
    c->attrs().Set("axis", int64_t{2});
    return c->output(0);
  }
  // [B, S, H d] -> [B, H, S, d]
  Value SplitHeads(Value x, int64_t heads, const std::string& what) {
    Value r = b_.Op(OpKind::kReshape, {x, b_.Ints({0, 0, heads, -1})}, what + "_split_heads");
    ir::Node* t = b_.Node(OpKind::kTranspose, {r}, what + "_transpose");
    t->attrs().Set("perm", std::vector<int64_t>{0, 2, 1, 3});
    return t->output(0);
  }
  // [B, Hkv, S, d] -> [B, Hq, S, d], each key/value head repeated Hq / Hkv times in place.
  Value RepeatHeads(Value x, int64_t hq, int64_t hkv, int64_t d, const std::string& what) {
    Value u = b_.Op(OpKind::kUnsqueeze, {x, b_.Ints({2})}, what + "_unsqueeze");
    Value e = b_.Op(OpKind::kExpand, {u, b_.Ints({1, 1, hq / hkv, 1, 1})}, what + "_repeat");
    return b_.Op(OpKind::kReshape, {e, b_.Ints({0, hq, -1, d})}, what + "_repeat_reshape");
  }
  // Where(allowed, 0, -inf) in Q's type.
  StatusOr<Value> AllowedToBias(Value allowed, const std::string& what) {
    AMP_ASSIGN_OR_RETURN(Value zero, b_.Scalar(t1_, 0.0));
    AMP_ASSIGN_OR_RETURN(Value ninf, b_.Scalar(t1_, -INFINITY));
    return b_.Op(OpKind::kWhere, {allowed, zero, ninf}, what);
  }

  // The additive bias of mask, causality, window and padding; invalid when
  // there is none. q and k are [B, H, S, d] (k with the past).
  StatusOr<Value> Bias(Value q, Value k, bool past) {
    const auto& a = n_->attrs();
    const bool causal = a.Int("is_causal", 0) != 0;
    const int64_t left = a.Int("left_window_size", -1), right = a.Int("right_window_size", -1);
    const bool window = left >= 0 || right >= 0;
    const bool mask = n_->has_input(3), nonpad = n_->has_input(6);
    if (!causal && !window && !mask && !nonpad) return Value{};
    can_mask_rows_ = mask || window || nonpad;

    ShapeBuilder qs(g_, q, base_ + "_q"), ks(g_, k, base_ + "_k");
    Value bias;
    auto add = [&](Value b, const std::string& what) { bias = bias.valid() ? b_.Op(OpKind::kAdd, {bias, b}, what) : b; };
    if (mask) {
      Value m = n_->input(3);
      const ir::TensorType& mt = g_.type(m);
      if (mt.dtype == DType::kBool) {
        AMP_ASSIGN_OR_RETURN(m, AllowedToBias(m, "mask_bias"));
      } else if (!ir::IsFloat(mt.dtype)) {
        return Unimplemented(n_->Describe(), ": attn_mask of type ", ir::DTypeName(mt.dtype),
                             "; amptrain takes a bool or float mask");
      } else if (mt.dtype != t1_) {
        m = b_.Cast(m, t1_);
      }
      // A mask shorter than the keys (nonpad_kv_seqlen's external cache) is
      // padded with -inf on the right.
      if (mt.has_shape && mt.shape.rank() >= 1 && total_keys_ >= 0) {
        const ir::Dim& mk = mt.shape[mt.shape.rank() - 1];
        if (mk.is_static() && mk.value < total_keys_) {
          std::vector<int64_t> pads(2 * mt.shape.rank(), 0);
          pads[2 * mt.shape.rank() - 1] = total_keys_ - mk.value;
          AMP_ASSIGN_OR_RETURN(Value ninf, b_.Scalar(t1_, -INFINITY));
          m = b_.Op(OpKind::kPad, {m, b_.Ints(pads), ninf}, "mask_pad");
        }
      }
      add(m, "mask");
    }
    if (causal || window || nonpad) {
      // query index i as [Sq, 1], key index j as [Skv]; offset a scalar or [B, 1, 1, 1].
      Value zero = b_.IntScalar(0), one = b_.IntScalar(1);
      Value qi = b_.Op(OpKind::kRange, {zero, qs.Dim(2), one}, "query_index");
      qi = b_.Op(OpKind::kUnsqueeze, {qi, b_.Ints({1})}, "query_index_column");
      Value kj = b_.Op(OpKind::kRange, {zero, ks.Dim(2), one}, "key_index");
      Value offset, nonpad_len;
      if (nonpad) {
        nonpad_len = b_.Op(OpKind::kReshape, {n_->input(6), b_.Ints({-1, 1, 1, 1})}, "nonpad_len");
        offset = b_.Op(OpKind::kSub, {nonpad_len, qs.Dim(2)}, "offset");
      } else if (past) {
        ShapeBuilder ps(g_, n_->input(4), base_ + "_past");
        offset = ps.Dim(2);
      }
      Value pos = offset.valid() ? b_.Op(OpKind::kAdd, {qi, offset}, "query_position") : qi;  // i + offset
      if (causal) {
        AMP_ASSIGN_OR_RETURN(Value b, AllowedToBias(b_.Op(OpKind::kLessOrEqual, {kj, pos}, "causal_allowed"), "causal_bias"));
        add(b, "add_causal");
      }
      if (window) {
        Value diff = b_.Op(OpKind::kSub, {pos, kj}, "window_diff");  // i + offset - j
        Value allowed;
        if (left >= 0) allowed = b_.Op(OpKind::kLessOrEqual, {diff, b_.IntScalar(left)}, "window_left");
        if (right >= 0) {
          Value r = b_.Op(OpKind::kGreaterOrEqual, {diff, b_.IntScalar(-right)}, "window_right");
          allowed = allowed.valid() ? b_.Op(OpKind::kAnd, {allowed, r}, "window_allowed") : r;
        }
        AMP_ASSIGN_OR_RETURN(Value b, AllowedToBias(allowed, "window_bias"));
        add(b, "add_window");
      }
      if (nonpad) {
        AMP_ASSIGN_OR_RETURN(Value b, AllowedToBias(b_.Op(OpKind::kLess, {kj, nonpad_len}, "nonpad_allowed"), "nonpad_bias"));
        add(b, "add_nonpad");
      }
    }
    return bias;
  }

  ir::Graph& g_;
  ir::Node* n_;
  std::string base_;
  Builder b_;
  DType t1_ = DType::kFloat32, t2_ = DType::kFloat32;
  int64_t total_keys_ = -1;  // past + new keys, -1 where not static
  bool can_mask_rows_ = false;
};

}  // namespace

Status LowerAttention(ir::Graph& g, ir::Node* n) { return AttentionLowering(g, n).Run(); }

}  // namespace amptrain::importer::lowering
