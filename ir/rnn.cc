#include "ir/rnn.h"

#include <cmath>

namespace amptrain::ir {

OpKind RnnCellOf(OpKind op) {
  switch (op) {
    case OpKind::kGRU:
    case OpKind::kGRUGrad: return OpKind::kGRU;
    case OpKind::kLSTM:
    case OpKind::kLSTMGrad: return OpKind::kLSTM;
    default: return OpKind::kRNN;
  }
}

StatusOr<RnnConfig> ParseRnnConfig(OpKind op, const Attributes& attrs) {
  RnnConfig c;
  c.cell = RnnCellOf(op);
  c.gates = c.cell == OpKind::kLSTM ? 4 : c.cell == OpKind::kGRU ? 3 : 1;
  AMP_ASSIGN_OR_RETURN(std::string direction, attrs.GetString("direction", "forward"));
  if (direction == "bidirectional") c.directions = 2;
  else if (direction == "reverse") c.reverse = true;
  else if (direction != "forward")
    return InvalidArgument("direction '", direction, "' is not one of forward, reverse, bidirectional");
  AMP_ASSIGN_OR_RETURN(c.hidden_size, attrs.GetInt("hidden_size", 0));
  if (c.hidden_size < 0) return InvalidArgument("hidden_size ", c.hidden_size, " is negative");
  AMP_ASSIGN_OR_RETURN(c.layout, attrs.GetInt("layout", 0));
  if (c.layout != 0 && c.layout != 1) return InvalidArgument("layout ", c.layout, " is not 0 or 1");
  if (attrs.Has("clip")) {
    AMP_ASSIGN_OR_RETURN(c.clip, attrs.GetFloat("clip", 0));
    if (!(c.clip > 0) || std::isinf(c.clip)) return InvalidArgument("clip ", c.clip, " must be positive and finite");
  }
  if (c.cell == OpKind::kGRU) {
    AMP_ASSIGN_OR_RETURN(int64_t lbr, attrs.GetInt("linear_before_reset", 0));
    if (lbr != 0 && lbr != 1) return InvalidArgument("linear_before_reset ", lbr, " is not 0 or 1");
    c.linear_before_reset = lbr == 1;
  }
  if (c.cell == OpKind::kLSTM) {
    AMP_ASSIGN_OR_RETURN(int64_t input_forget, attrs.GetInt("input_forget", 0));
    if (input_forget != 0) return Unimplemented("input_forget=", input_forget, " (coupled input and forget gates) is not supported");
  }
  // Defaults: RNN Tanh; GRU Sigmoid, Tanh; LSTM Sigmoid, Tanh, Tanh.
  std::vector<std::string> names;
  const size_t slots = c.cell == OpKind::kLSTM ? 3 : c.cell == OpKind::kGRU ? 2 : 1;
  if (attrs.Has("activations")) {
    AMP_ASSIGN_OR_RETURN(names, attrs.GetStrings("activations"));
    if (names.size() != slots * static_cast<size_t>(c.directions))
      return InvalidArgument("activations has ", names.size(), " entries, expected ", slots * c.directions, " (",
                             slots, " per direction)");
    if (attrs.Has("activation_alpha") || attrs.Has("activation_beta"))
      return Unimplemented("activation_alpha/activation_beta are not supported (activations Sigmoid, Tanh, Relu only)");
  } else {
    for (int64_t d = 0; d < c.directions; ++d) {
      if (c.cell != OpKind::kRNN) names.push_back("Sigmoid");
      names.push_back("Tanh");
      if (c.cell == OpKind::kLSTM) names.push_back("Tanh");
    }
  }
  c.activations.assign(c.directions, {});
  for (size_t i = 0; i < names.size(); ++i) {
    RnnActivation a;
    if (names[i] == "Sigmoid") a = RnnActivation::kSigmoid;
    else if (names[i] == "Tanh") a = RnnActivation::kTanh;
    else if (names[i] == "Relu") a = RnnActivation::kRelu;
    else return Unimplemented("activation '", names[i], "' is not supported (Sigmoid, Tanh and Relu are)");
    c.activations[i / slots].push_back(a);
  }
  return c;
}

RnnReserveLayout ReserveLayout(const RnnConfig& c, int64_t rows, int64_t hidden) {
  RnnReserveLayout l;
  const int64_t gates = rows * c.gates * hidden, states = rows * hidden;
  int64_t at = 0;
  auto take = [&](int64_t n) {
    const int64_t offset = at;
    at += n;
    return offset;
  };
  l.gates = take(gates);
  l.hprev = take(states);
  if (c.cell == OpKind::kLSTM) {
    l.cprev = take(states);
    l.cnew = take(states);
  }
  if (c.cell == OpKind::kGRU) (c.linear_before_reset ? l.q : l.rh) = take(states);
  if (c.clip > 0) l.pass = take(gates);
  l.per_direction = at;
  return l;
}

}  // namespace amptrain::ir
