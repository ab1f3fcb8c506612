#include "executor/train/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <type_traits>

#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/float_convert.h"
#include "executor/train/clip.h"
#include "executor/train/eval_mode.h"
#include "executor/train/sha256.h"

namespace amptrain::executor::train {

using ir::Tensor;
using FeedMap = std::map<std::string, Tensor>;

uint64_t StepSeed(uint64_t seed, int64_t step) {
  uint64_t z = seed + (static_cast<uint64_t>(step) + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z == 0 ? 1 : z;  // 0 would mean "no run seed"
}

namespace {

std::map<std::string, int> OutputIndex(const ir::Graph& g) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < g.outputs().size(); ++i) index.emplace(g.name(g.outputs()[i]), static_cast<int>(i));
  return index;
}

// `out` (fp32, or `dst`'s dtype, same dims) into the buffer of `dst`: copied,
// or rounded to nearest even (fp16/bf16).
void StoreInto(const Tensor& out, Tensor& dst) {
  if (out.dtype() == dst.dtype()) std::memcpy(dst.raw(), out.raw(), out.nbytes());
  else kernels::cpu::NarrowFromFloat(dst.dtype(), out.data<float>(), dst.raw(), out.num_elements(), 1);
}

// `t` (fp32, or already `dtype`) as `dtype`: fp16/bf16 rounded to nearest even.
StatusOr<Tensor> InDType(const Tensor& t, ir::DType dtype) {
  if (t.dtype() == dtype) return t.Clone();
  if (t.dtype() != ir::DType::kFloat32 || !kernels::cpu::IsTwoByteFloat(dtype))
    return Internal("cannot convert a ", ir::DTypeName(t.dtype()), " tensor to ", ir::DTypeName(dtype));
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(dtype, t.dims()));
  StoreInto(t, out);
  return out;
}

// A batch tensor as the model input `name` of type `want` takes it: as it
// is when the dtypes agree; float32 rounded to fp16/bf16 (a model converted
// without keep_io_types) or widened to float64; int64 (how the data sets
// hold integers) converted to the input's integer type, or to float32/64 (an
// integer attention mask for a float input), when every value is exact there.
StatusOr<Tensor> AsInputType(const Tensor& t, ir::DType want, const std::string& name) {
  if (t.dtype() == want) return t;
  if (t.dtype() == ir::DType::kFloat32 && kernels::cpu::IsTwoByteFloat(want)) return InDType(t, want);
  if (t.dtype() == ir::DType::kFloat32 && want == ir::DType::kFloat64) {
    AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(want, t.dims()));
    const float* src = t.data<float>();
    double* dst = out.data<double>();
    for (int64_t i = 0; i < t.num_elements(); ++i) dst[i] = src[i];
    return out;
  }
  if (t.dtype() == ir::DType::kInt64 &&
      (ir::IsInteger(want) || want == ir::DType::kFloat32 || want == ir::DType::kFloat64)) {
    AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(want, t.dims()));
    auto narrow = [&](auto* dst) -> Status {
      using T = std::remove_pointer_t<decltype(dst)>;
      const int64_t* src = t.data<int64_t>();
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        dst[i] = static_cast<T>(src[i]);
        if (static_cast<int64_t>(dst[i]) != src[i])
          return InvalidArgument("input '", name, "': value ", src[i], " (element ", i, ") does not fit the model's ",
                                 ir::DTypeName(want));
      }
      return Status::Ok();
    };
    switch (want) {
      case ir::DType::kFloat32: AMP_RETURN_IF_ERROR(narrow(out.data<float>())); break;
      case ir::DType::kFloat64: AMP_RETURN_IF_ERROR(narrow(out.data<double>())); break;
      case ir::DType::kInt32: AMP_RETURN_IF_ERROR(narrow(out.data<int32_t>())); break;
      case ir::DType::kInt8: AMP_RETURN_IF_ERROR(narrow(out.data<int8_t>())); break;
      case ir::DType::kUInt8: AMP_RETURN_IF_ERROR(narrow(out.data<uint8_t>())); break;
      default: return Internal("no conversion of int64 to ", ir::DTypeName(want));
    }
    return out;
  }
  return InvalidArgument("input '", name, "': the data holds ", ir::DTypeName(t.dtype()), " but the model takes ",
                         ir::DTypeName(want));
}

// Whether a batch of images [B, C, H, W] goes to a model input declared
// channels-last, [?, H, W, C] with C static (a TensorFlow/Keras model
// through tf2onnx): where the declared dims fit that and not [?, C, H, W].
bool WantsChannelsLast(const std::vector<int64_t>& dims, const ir::TensorType& want) {
  if (dims.size() != 4 || !want.has_shape || want.shape.rank() != 4 || !want.shape[3].is_static()) return false;
  auto fits = [&](size_t i, int64_t v) { return !want.shape[i].is_static() || want.shape[i].value == v; };
  const int64_t c = dims[1], h = dims[2], w = dims[3];
  return !(fits(1, c) && fits(2, h) && fits(3, w)) && fits(1, h) && fits(2, w) && fits(3, c);
}

// [B, C, H, W] -> [B, H, W, C], any element type.
StatusOr<Tensor> ToChannelsLast(const Tensor& t) {
  const int64_t b = t.dims()[0], c = t.dims()[1], hw = t.dims()[2] * t.dims()[3];
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(t.dtype(), {b, t.dims()[2], t.dims()[3], c}));
  const size_t e = ir::DTypeSize(t.dtype());
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t n = 0; n < b; ++n)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        std::memcpy(dst + ((n * hw + p) * c + ch) * e, src + ((n * c + ch) * hw + p) * e, e);
  return out;
}

// The batch tensor in the input's dtype (AsInputType) and layout: images
// [B, C, H, W] for a channels-last input transposed to [B, H, W, C].
StatusOr<Tensor> AsInput(const Tensor& t, const ir::TensorType& want, const std::string& name) {
  AMP_ASSIGN_OR_RETURN(Tensor typed, AsInputType(t, want.dtype, name));
  if (!WantsChannelsLast(typed.dims(), want)) return typed;
  return ToChannelsLast(typed);
}

std::string Joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += StrCat(s.empty() ? "'" : ", '", n, "'");
  return s;
}

// The batch's inputs by model input name, each in the input's dtype and layout (AsInput). An
// unnamed input ("") feeds the model's only data input; every data input
// must be fed exactly once, and no other.
StatusOr<std::map<std::string, Tensor>> BatchFeeds(const std::vector<std::string>& inputs,
                                                   const std::map<std::string, ir::TensorType>& types,
                                                   const data::Batch& batch) {
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, t] : batch.inputs) {
    std::string target = name;
    if (target.empty()) {
      if (inputs.size() != 1)
        return InvalidArgument("the model has ", inputs.size(), " data inputs (", Joined(inputs),
                               ") but the data set has one unnamed input; name each (npy:NAME=FILE,...,labels=FILE)");
      target = inputs[0];
    } else if (std::find(inputs.begin(), inputs.end(), target) == inputs.end()) {
      return InvalidArgument("the data set has an input '", target, "' but the model's data inputs are ",
                             Joined(inputs));
    }
    AMP_ASSIGN_OR_RETURN(Tensor value, AsInput(t, types.at(target), target));
    if (!feeds.emplace(target, std::move(value)).second)
      return InvalidArgument("the data set feeds the model's input '", target, "' twice");
  }
  for (const std::string& name : inputs)
    if (!feeds.count(name))
      return InvalidArgument("the model's input '", name, "' gets no data; the data set feeds ",
                             feeds.empty() ? std::string("none") : Joined([&] {
                               std::vector<std::string> fed;
                               for (const auto& [n, t] : feeds) fed.push_back(n);
                               return fed;
                             }()),
                             " (npy:NAME=FILE,...,labels=FILE names each input)");
  return feeds;
}

std::map<std::string, ir::TensorType> InputTypes(const ir::Graph& g, const std::vector<std::string>& inputs) {
  std::map<std::string, ir::TensorType> types;
  for (const std::string& name : inputs) types[name] = g.type(g.FindValue(name));
  return types;
}

StatusOr<Tensor> InitializerValue(const ir::Graph& model, const std::string& name) {
  const Tensor* t = model.ConstantValue(model.FindValue(name));
  if (!t) return Internal("'", name, "' is not an initializer of the model");
  return t->Clone();
}

// Low copies of the master weights (TrainGraphOptions::low_weights) pay
// where the CPU computes the policy's low type: bf16 on a CPU whose bf16 is
// faster than fp32. fp16 is storage only on every CPU here.
bool LowWeightsPay(const std::optional<amp::Policy>& policy) {
  return policy && policy->low == ir::DType::kBFloat16 && kernels::cpu::Cpu().bf16_faster();
}

}  // namespace

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const ir::Graph& model, const TrainConfig& config) {
  std::unique_ptr<Trainer> t(new Trainer());
  t->config_ = config;
  t->model_ = model.Clone();
  TrainGraphOptions graph_options = config.graph;
  if (!config.low_weights.has_value()) graph_options.low_weights = LowWeightsPay(config.graph.amp);
  else graph_options.low_weights = *config.low_weights;
  AMP_ASSIGN_OR_RETURN(t->train_, BuildTrainGraph(model, graph_options));
  if (t->train_.amp_report) {
    std::string plan;
    for (const amp::NodeReport& n : t->train_.amp_report->nodes) plan += StrCat(n.name, ":", ir::DTypeName(n.dtype), ";");
    t->plan_hash_ = Sha256Hex(plan);
  }
  if (config.loss_scaler) {
    AMP_ASSIGN_OR_RETURN(LossScaler scaler, LossScaler::Create(*config.loss_scaler));
    t->scaler_ = scaler;
  }
  // State in the dtype the training graph reads it in: the model's fp32
  // values, or (O3: weights stored low) those values rounded once.
  const ir::Graph& tg = *t->train_.graph;
  std::map<std::string, Tensor> params, stats;
  for (const std::string& name : t->train_.params) {
    AMP_ASSIGN_OR_RETURN(Tensor value, InitializerValue(model, name));
    if (value.dtype() != ir::DType::kFloat32)
      return Unimplemented("parameter '", name, "' is ", ir::DTypeName(value.dtype()),
                           "; training needs float32 parameters in the model");
    AMP_ASSIGN_OR_RETURN(params[name], InDType(value, tg.type(tg.FindValue(name)).dtype));
  }
  for (const std::string& name : t->train_.running_stats) {
    AMP_ASSIGN_OR_RETURN(Tensor value, InitializerValue(model, name));
    AMP_ASSIGN_OR_RETURN(stats[name], InDType(value, tg.type(tg.FindValue(name)).dtype));
  }
  std::map<std::string, ir::DType> low_dtypes;
  for (const auto& [param, input] : t->train_.low_weights) low_dtypes[param] = tg.type(tg.FindValue(input)).dtype;
  AMP_ASSIGN_OR_RETURN(LrSchedule schedule, LrSchedule::Create(config.schedule));
  t->schedule_ = std::make_unique<LrSchedule>(schedule);
  if (!(config.clip_grad_norm >= 0.0 && std::isfinite(config.clip_grad_norm)))
    return InvalidArgument("the gradient-norm clip must be finite and >= 0, got ", config.clip_grad_norm);

  t->input_types_ = InputTypes(tg, t->train_.data_inputs);
  if (config.debug_overflow && config.device && !config.device->host_memory())
    return Unimplemented("--debug-overflow watches every node's outputs in host memory; on ",
                         config.device->Describe(), " it cannot (run it on the CPU)");
  SessionOptions options;
  options.threads = config.threads;
  options.training = true;
  options.kernel_impl = config.kernel_impl;
  options.channels_last = config.channels_last;
  options.profile = config.profile;
  options.device_instance = config.device;
  AMP_ASSIGN_OR_RETURN(t->session_, InferenceSession::Create(std::move(t->train_.graph), options));
  t->dev_ = t->session_->device_tensors();
  t->out_index_ = OutputIndex(t->session_->graph());
  // The low copies' dtypes, then the state in place (uploaded on a device).
  for (const auto& [param, dtype] : low_dtypes) {
    AMP_ASSIGN_OR_RETURN(t->low_weights_[param], Tensor::Zeros(dtype, {}));
  }
  AMP_RETURN_IF_ERROR(t->SetState(params, stats));
  t->ShareModelWeights();
  AMP_ASSIGN_OR_RETURN(t->optimizer_, Optimizer::Create(config.optimizer, t->dev_));
  t->grad_checker_.SetDevice(t->dev_);
  AMP_RETURN_IF_ERROR(t->PrepareBindings());
  spdlog::debug("training graph: {} nodes, {} parameters, {} running statistics", t->session_->graph().num_nodes(),
                t->train_.params.size(), t->train_.running_stats.size());
  return t;
}

StatusOr<std::map<std::string, Tensor>> Trainer::Feeds(const TrainGraph& g, const data::Batch& batch,
                                                        float loss_scale) const {
  AMP_ASSIGN_OR_RETURN(FeedMap feeds, BatchFeeds(g.data_inputs, input_types_, batch));
  feeds.emplace(g.target_input, batch.labels);
  if (!g.loss_scale.empty()) feeds.emplace(g.loss_scale, Tensor::Scalar(loss_scale));
  for (const auto& [name, t] : params_) feeds.emplace(name, t);
  for (const auto& [name, t] : stats_) feeds.emplace(name, t);
  for (const auto& [param, input] : g.low_weights) feeds.emplace(input, low_weights_.at(param));
  return feeds;
}

Status Trainer::BindStep(const data::Batch& batch, float loss_scale) {
  for (const StateBinding& b : state_bindings_) session_->BindInput(b.input, *b.tensor);
  if (loss_scale_index_ >= 0) {
    if (*loss_scale_host_.data<float>() != loss_scale) {  // on the host loss_scale_ is this buffer
      *loss_scale_host_.data<float>() = loss_scale;
      AMP_RETURN_IF_ERROR(dev_.CopyIn(loss_scale_, loss_scale_host_));
    }
    session_->BindInput(loss_scale_index_, loss_scale_);
  }
  const std::vector<std::string>& inputs = train_.data_inputs;
  // On the host the batch's tensors are bound as they are; on a device they
  // are copied into the staged buffers (synchronised below, so that the
  // converted feeds may go).
  auto bind = [&](int index, size_t slot, const Tensor& t) -> Status {
    if (dev_.on_host()) {
      session_->BindInput(index, t);
      return Status::Ok();
    }
    AMP_ASSIGN_OR_RETURN(const Tensor* staged, Staged(slot, t));
    session_->BindInput(index, *staged);
    return Status::Ok();
  };
  AMP_RETURN_IF_ERROR(bind(target_index_, inputs.size(), batch.labels));
  bool in_place = batch.inputs.size() == inputs.size();
  for (size_t i = 0; in_place && i < inputs.size(); ++i) {
    const auto& [name, t] = batch.inputs[i];
    const ir::TensorType& want = input_types_.at(inputs[i]);
    in_place = (name == inputs[i] || (name.empty() && inputs.size() == 1)) && t.dtype() == want.dtype &&
               !WantsChannelsLast(t.dims(), want);
  }
  if (in_place) {
    for (size_t i = 0; i < inputs.size(); ++i) AMP_RETURN_IF_ERROR(bind(data_input_index_[i], i, batch.inputs[i].second));
  } else {
    AMP_ASSIGN_OR_RETURN(FeedMap feeds, BatchFeeds(inputs, input_types_, batch));
    for (size_t i = 0; i < inputs.size(); ++i) AMP_RETURN_IF_ERROR(bind(data_input_index_[i], i, feeds.at(inputs[i])));
  }
  return dev_.Synchronize();
}

StatusOr<const Tensor*> Trainer::Staged(size_t slot, const Tensor& host) {
  if (staged_.size() <= slot) staged_.resize(slot + 1);
  Tensor& d = staged_[slot];
  if (d.empty() || d.dtype() != host.dtype() || d.dims() != host.dims()) {
    AMP_ASSIGN_OR_RETURN(d, dev_.Zeros(host.dtype(), host.dims()));
  }
  AMP_RETURN_IF_ERROR(dev_.CopyIn(d, host));
  return &d;
}

Status Trainer::SetState(const std::map<std::string, Tensor>& params, const std::map<std::string, Tensor>& stats) {
  // Everything is made before anything changes: on error the state stays.
  auto placed = [this](const Tensor& host) -> StatusOr<Tensor> {
    if (dev_.on_host()) return host;
    return dev_.Upload(host);
  };
  std::map<std::string, Tensor> new_params, new_stats, new_low;
  for (const auto& [name, t] : params) {
    AMP_ASSIGN_OR_RETURN(new_params[name], placed(t));
  }
  for (const auto& [name, t] : stats) {
    AMP_ASSIGN_OR_RETURN(new_stats[name], placed(t));
  }
  for (const auto& [name, low] : low_weights_) {
    AMP_ASSIGN_OR_RETURN(Tensor host, InDType(params.at(name), low.dtype()));
    AMP_ASSIGN_OR_RETURN(new_low[name], placed(host));
  }
  // Assigned into the existing entries: state_bindings_ points at them.
  for (auto& [name, t] : new_params) params_[name] = std::move(t);
  for (auto& [name, t] : new_stats) stats_[name] = std::move(t);
  for (auto& [name, t] : new_low) low_weights_[name] = std::move(t);
  return Status::Ok();
}

Status Trainer::StoreStats(const std::vector<Tensor>& outs) {
  for (const auto& [stat, update] : train_.stat_updates) {
    const Tensor& out = outs[out_index_.at(update)];
    Tensor& dst = stats_[stat];
    if (dev_.on_host()) {
      StoreInto(out, dst);
    } else if (out.dtype() == dst.dtype()) {
      AMP_RETURN_IF_ERROR(dev_.CopyOnDevice(dst, out));
    } else {  // O3's statistics stored low: rounded on the host (a few values per channel)
      AMP_ASSIGN_OR_RETURN(Tensor wide, dev_.Download(out));
      AMP_ASSIGN_OR_RETURN(Tensor low, InDType(wide, dst.dtype()));
      AMP_RETURN_IF_ERROR(dev_.CopyIn(dst, low));
      AMP_RETURN_IF_ERROR(dev_.Synchronize());
    }
  }
  return Status::Ok();
}

Status Trainer::PrepareBindings() {
  auto index = [this](const std::string& name) -> StatusOr<int> {
    const int i = session_->InputIndex(name);
    if (i < 0) return Internal("the training graph has no input '", name, "'");
    return i;
  };
  for (const auto& [name, t] : params_) {
    AMP_ASSIGN_OR_RETURN(int i, index(name));
    state_bindings_.push_back({i, &t});
  }
  for (const auto& [name, t] : stats_) {
    AMP_ASSIGN_OR_RETURN(int i, index(name));
    state_bindings_.push_back({i, &t});
  }
  for (const auto& [param, input] : train_.low_weights) {
    AMP_ASSIGN_OR_RETURN(int i, index(input));
    state_bindings_.push_back({i, &low_weights_.at(param)});
  }
  for (const std::string& name : train_.data_inputs) {
    AMP_ASSIGN_OR_RETURN(int i, index(name));
    data_input_index_.push_back(i);
  }
  AMP_ASSIGN_OR_RETURN(target_index_, index(train_.target_input));
  if (!train_.loss_scale.empty()) {
    AMP_ASSIGN_OR_RETURN(loss_scale_index_, index(train_.loss_scale));
    loss_scale_host_ = Tensor::Scalar(1.0f);
    loss_scale_ = loss_scale_host_;
    if (!dev_.on_host()) {
      AMP_ASSIGN_OR_RETURN(loss_scale_, dev_.Upload(loss_scale_host_));
    }
  }
  for (const auto& [param, grad] : train_.grads) {
    Tensor* entry = &grads_[param];
    grad_outputs_.emplace_back(entry, out_index_.at(grad));
  }
  return Status::Ok();
}

void Trainer::UnbindBatch() {
  session_->BindInput(target_index_, Tensor());
  for (int index : data_input_index_) session_->BindInput(index, Tensor());
}

StatusOr<std::optional<OverflowSite>> Trainer::Diagnose(uint64_t seed) {
  std::optional<OverflowSite> site;
  if (!dev_.on_host()) {  // the observer reads host memory
    spdlog::info("overflow provenance reads every node's outputs on the host; on {} it is off (train on the CPU "
                 "with --debug-overflow to find the node)",
                 session_->device()->Describe());
    return site;
  }
  RunOptions run;
  run.seed = seed;
  run.observer = FirstNonFiniteObserver(session_->run_graph(), &site);
  AMP_RETURN_IF_ERROR(session_->RunBound(run).status());
  if (site) AttributeToModelNode(session_->graph(), *site);
  return site;
}

StatusOr<StepResult> Trainer::Step(const Tensor& images, const Tensor& labels) {
  data::Batch batch;
  batch.inputs.emplace_back("", images);
  batch.labels = labels;
  return Step(batch);
}

Status Trainer::CheckInputs(const data::Batch& batch) const {
  AMP_RETURN_IF_ERROR(BatchFeeds(train_.data_inputs, input_types_, batch).status());
  for (const auto& [name, t] : batch.inputs) {
    const std::string& input = name.empty() ? train_.data_inputs[0] : name;
    if (WantsChannelsLast(t.dims(), input_types_.at(input)))
      spdlog::info("input '{}' is channels-last, {}: the data's [C, H, W] images go to it as [H, W, C]", input,
                   input_types_.at(input).ToString());
  }
  return Status::Ok();
}

StatusOr<StepResult> Trainer::Step(const data::Batch& batch) {
  const Tensor& labels = batch.labels;
  RunOptions run;
  run.seed = StepSeed(config_.seed, step_);
  StepResult r;
  r.loss_scale = scaler_ ? scaler_->scale() : 1.0f;
  if (labels.empty()) return InvalidArgument("the batch has no labels");
  AMP_RETURN_IF_ERROR(BindStep(batch, r.loss_scale));
  struct Unbind {
    Trainer* t;
    ~Unbind() { t->UnbindBatch(); }
  } unbind{this};
  if (config_.debug_overflow) run.observer = FirstNonFiniteObserver(session_->run_graph(), &r.site);
  AMP_ASSIGN_OR_RETURN(const std::vector<Tensor>* outs_ptr, session_->RunBound(run));
  const std::vector<Tensor>& outs = *outs_ptr;
  if (r.site) AttributeToModelNode(session_->graph(), *r.site);
  {
    AMP_ASSIGN_OR_RETURN(Tensor loss, dev_.Download(outs[out_index_.at(train_.loss)]));
    r.loss = loss.GetAsDouble(0);
  }
  r.count = batch.size();
  r.labelled = r.count;
  if (config_.graph.loss == "cross_entropy") {
    const Tensor& logits = outs[out_index_.at(train_.AccuracyOutput())];
    const Tensor* host_logits = &logits;
    if (!dev_.on_host()) {
      if (logits_host_.dims() != logits.dims() || logits_host_.dtype() != logits.dtype()) {
        AMP_ASSIGN_OR_RETURN(logits_host_, Tensor::Zeros(logits.dtype(), logits.dims()));
      }
      AMP_RETURN_IF_ERROR(dev_.CopyOut(logits_host_, logits));
      host_logits = &logits_host_;
    }
    const Hits hits = CountCorrect(*host_logits, labels, train_.class_axis, config_.graph.ignore_index, config_.threads);
    r.correct = hits.correct;
    r.labelled = hits.counted;
    if (r.labelled == 0)
      return InvalidArgument("every label of the batch at step ", step_, " (", r.count, " samples) is the ignored index ",
                             config_.graph.ignore_index, "; the step was not applied");
  }
  const bool loss_finite = std::isfinite(r.loss);
  if (!loss_finite && !scaler_)
    return Status(StatusCode::kOutOfRange, StrCat("the loss is ", r.loss, " at step ", step_,
                                                  "; the step was not applied (try a lower learning rate)"));

  for (auto& [grad, index] : grad_outputs_) *grad = outs[index];
  if (config_.gradient_hook) {
    if (dev_.on_host()) {
      config_.gradient_hook(step_, grads_);
    } else {  // the hook gets host copies, copied back
      std::map<std::string, Tensor> host;
      for (const auto& [name, g] : grads_) {
        AMP_ASSIGN_OR_RETURN(host[name], dev_.Download(g));
      }
      config_.gradient_hook(step_, host);
      for (const auto& [name, g] : grads_) AMP_RETURN_IF_ERROR(dev_.CopyIn(g, host.at(name)));
      AMP_RETURN_IF_ERROR(dev_.Synchronize());
    }
  }
  // inf/NaN in the gradients, unscaled (by 1 without a scaler), in one read.
  AMP_ASSIGN_OR_RETURN(OverflowCheck check, grad_checker_.Check(grads_, r.loss_scale));
  if (!loss_finite && !check.found_inf) check = {true, train_.loss};
  r.applied = !check.found_inf;
  if (check.found_inf) r.overflow = check.first_overflow;
  if (scaler_) {
    StatusOr<bool> applied = scaler_->Update(check.found_inf, check.first_overflow);
    // Diagnosed once per run of overflows at the floor, and for the stuck error.
    const bool at_floor = check.found_inf && scaler_->scale() <= config_.loss_scaler->min_scale;
    if ((!applied.ok() || (at_floor && !diagnosed_at_floor_)) && !r.site) {
      AMP_ASSIGN_OR_RETURN(r.site, Diagnose(run.seed));
      diagnosed_at_floor_ = at_floor;
    }
    if (!check.found_inf) diagnosed_at_floor_ = false;
    if (!applied.ok()) {
      std::string where = r.site ? StrCat("; inf/NaN first appears in ", Describe(*r.site)) : "";
      std::string fix = r.site && !PolicyFix(*r.site).empty()
                            ? StrCat("; to keep '", r.site->model_node, "' in fp32 add to the policy: ", PolicyFix(*r.site))
                            : "";
      return Status(applied.status().code(), StrCat(applied.status().message(), " (step ", step_, ")", where, fix));
    }
    r.applied = *applied;
    if (scaler_->scale() != r.loss_scale)
      spdlog::info("step {}: loss scale {} -> {}{}", step_, r.loss_scale, scaler_->scale(),
                   check.found_inf ? " (overflow in '" + check.first_overflow + "', step skipped)" : "");
  } else if (check.found_inf) {
    ++skipped_without_scaler_;
    spdlog::warn("step {}: the gradient of '{}' is not finite; the step was skipped", step_, check.first_overflow);
  }
  if (r.site && check.found_inf)
    spdlog::warn("step {}: inf/NaN first appears in {}{}", step_, Describe(*r.site),
                 PolicyFix(*r.site).empty() ? "" : "; policy fix: " + PolicyFix(*r.site));
  r.lr = schedule_->At(lr_step_);
  if (r.applied) {
    // The step kernels unscale and clip in registers: clipping sees the
    // unscaled gradients (torch.nn.utils.clip_grad_norm_'s coefficient).
    Optimizer::GradScaling scaling;
    scaling.inv_scale = GradientChecker::InverseScale(r.loss_scale);
    if (config_.clip_grad_norm > 0.0) {
      r.grad_norm = std::sqrt(check.sum_squares);
      const double coef = ClipCoefficient(r.grad_norm, config_.clip_grad_norm);
      if (coef < 1.0) scaling.clip_coef = static_cast<float>(coef);
    }
    AMP_RETURN_IF_ERROR(optimizer_->Step(params_, grads_, r.lr, scaling, &low_weights_));
    // The update outputs are fp32 (graph outputs keep their types); at O3 the
    // statistics are stored low, rounded once. They are the session's
    // buffers: copied into the statistics, which the next step reads.
    AMP_RETURN_IF_ERROR(StoreStats(outs));
    ++lr_step_;
  }
  ++step_;
  r.skipped_steps = scaler_ ? scaler_->skipped_steps() : skipped_without_scaler_;
  return r;
}

void Trainer::ShareModelWeights() {
  for (const auto& [name, param] : params_) {
    ir::Value v = model_->FindValue(name);
    ir::Node* n = v.valid() ? model_->producer(v) : nullptr;
    if (!n || n->op() != ir::OpKind::kInitializer) continue;
    if (param.dtype() == model_->type(v).dtype && dev_.on_host()) n->attrs().Set("value", param);
    else n->attrs().Erase("value");  // stored low (O3), or on a device
  }
}

Status Trainer::CreateEvalSession() {
  TrainGraphOptions opts = config_.graph;
  opts.label_smoothing = 0.0f;  // evaluation reports the plain loss
  std::vector<std::string> state = train_.params;
  state.insert(state.end(), train_.running_stats.begin(), train_.running_stats.end());
  AMP_ASSIGN_OR_RETURN(eval_, BuildEvalGraph(*model_, opts, state));
  SessionOptions options;
  options.threads = config_.threads;
  options.kernel_impl = config_.kernel_impl;
  options.channels_last = config_.channels_last;
  options.device_instance = session_->device();
  AMP_ASSIGN_OR_RETURN(eval_session_, InferenceSession::Create(std::move(eval_.graph), options));
  eval_out_index_ = OutputIndex(eval_session_->graph());
  return Status::Ok();
}

namespace {

// Loss and top-1 accuracy of the eval graph `g` run by `session` over the
// rest of the epoch of `batches`; `feeds` supplies the state inputs.
StatusOr<EvalResult> RunEvaluation(InferenceSession& session, const TrainGraph& g, int64_t ignore_index,
                                   const std::map<std::string, int>& out_index, data::BatchIterator& batches,
                                   const std::function<StatusOr<std::map<std::string, Tensor>>(const data::Batch&)>& feeds) {
  EvalResult r;
  double loss_sum = 0.0;
  int64_t correct = 0;
  data::Batch batch;
  while (true) {
    AMP_ASSIGN_OR_RETURN(bool more, batches.Next(&batch));
    if (!more) break;
    AMP_ASSIGN_OR_RETURN(FeedMap in, feeds(batch));
    AMP_ASSIGN_OR_RETURN(std::vector<Tensor> outs, session.Run(in));
    Hits hits{0, batch.size()};  // regression: the mean over samples
    if (batch.labels.dtype() == ir::DType::kInt64)
      hits = CountCorrect(outs[out_index.at(g.AccuracyOutput())], batch.labels, g.class_axis, ignore_index,
                          session.threads());
    // The batch's loss is the mean over its counted labels; a batch whose
    // every label is ignored has a NaN mean and weighs nothing.
    if (hits.counted > 0) loss_sum += outs[out_index.at(g.loss)].GetAsDouble(0) * static_cast<double>(hits.counted);
    correct += hits.correct;
    r.labelled += hits.counted;
    r.count += batch.size();
  }
  if (r.count == 0) return InvalidArgument("evaluation: the data set has no samples left in this epoch");
  if (r.labelled == 0)
    return InvalidArgument("evaluation: every label of the ", r.count, " samples is the ignored index ", ignore_index);
  r.loss = loss_sum / static_cast<double>(r.labelled);
  r.accuracy = static_cast<double>(correct) / static_cast<double>(r.labelled);
  return r;
}

}  // namespace

StatusOr<EvalResult> Trainer::Evaluate(data::BatchIterator& batches) {
  if (!eval_session_) AMP_RETURN_IF_ERROR(CreateEvalSession());
  // The two arenas are never held at once: peak memory is the larger of
  // training and evaluation, not their sum.
  session_->ReleaseMemory();
  // The eval graph computes in fp32: O3's low weights are fed widened.
  AMP_ASSIGN_OR_RETURN(const FeedMap state, Fp32ModelState());
  StatusOr<EvalResult> r =
      RunEvaluation(*eval_session_, eval_, config_.graph.ignore_index, eval_out_index_, batches,
                    [this, &state](const data::Batch& b) -> StatusOr<std::map<std::string, Tensor>> {
                      AMP_ASSIGN_OR_RETURN(FeedMap feeds, Feeds(eval_, b));
                      for (const auto& [name, t] : state) feeds[name] = t;
                      return feeds;
                    });
  eval_session_->ReleaseMemory();
  return r;
}

StatusOr<std::unique_ptr<Evaluator>> Evaluator::Create(const ir::Graph& model, const TrainGraphOptions& opts,
                                                       int threads, const std::string& kernel_impl,
                                                       std::shared_ptr<kernels::Device> device) {
  std::unique_ptr<Evaluator> e(new Evaluator());
  TrainGraphOptions o = opts;
  o.label_smoothing = 0.0f;
  e->ignore_index_ = o.ignore_index;
  AMP_ASSIGN_OR_RETURN(e->eval_, BuildEvalGraph(model, o, {}));
  e->input_types_ = InputTypes(*e->eval_.graph, e->eval_.data_inputs);
  SessionOptions options;
  options.threads = threads;
  options.kernel_impl = kernel_impl;
  options.device_instance = std::move(device);
  AMP_ASSIGN_OR_RETURN(e->session_, InferenceSession::Create(std::move(e->eval_.graph), options));
  e->out_index_ = OutputIndex(e->session_->graph());
  return e;
}

StatusOr<EvalResult> Evaluator::Evaluate(data::BatchIterator& batches) {
  return RunEvaluation(*session_, eval_, ignore_index_, out_index_, batches,
                       [this](const data::Batch& b) -> StatusOr<std::map<std::string, Tensor>> {
                         AMP_ASSIGN_OR_RETURN(FeedMap feeds,
                                              BatchFeeds(eval_.data_inputs, input_types_, b));
                         feeds.emplace(eval_.target_input, b.labels);
                         return feeds;
                       });
}

std::map<std::string, Tensor> Trainer::ModelState() const {
  std::map<std::string, Tensor> state = params_;
  state.insert(stats_.begin(), stats_.end());
  return state;
}

StatusOr<std::map<std::string, Tensor>> Trainer::HostModelState() const {
  std::map<std::string, Tensor> state = ModelState();
  for (auto& [name, t] : state) {
    AMP_ASSIGN_OR_RETURN(t, dev_.Download(t));
  }
  return state;
}

StatusOr<std::map<std::string, Tensor>> Trainer::Fp32ModelState() const {
  AMP_ASSIGN_OR_RETURN(FeedMap state, HostModelState());
  for (auto& [name, t] : state) {
    if (!kernels::cpu::IsTwoByteFloat(t.dtype())) continue;
    Tensor wide = *Tensor::Zeros(ir::DType::kFloat32, t.dims());
    kernels::cpu::WidenToFloat(t.dtype(), t.raw(), wide.data<float>(), t.num_elements(), 1);
    t = std::move(wide);
  }
  return state;
}

TrainerState Trainer::State() const {
  TrainerState s;
  s.step = step_;
  s.lr_step = lr_step_;
  s.optimizer_step = optimizer_->step_count();
  s.rng_state = config_.seed;
  if (scaler_) s.scaler = scaler_->StateJson();
  s.precision_plan_hash = plan_hash_;
  return s;
}

namespace {

// A checkpoint holds the trained parameters and the BN statistics. One
// written with another set of trained parameters (a different --freeze) is
// refused by name: a parameter trained there and frozen here would lose its
// trained value, one frozen there has no optimizer state.
Status CheckSameTrainedSet(const LoadedCheckpoint& ckpt, const ParameterReport& report,
                           const std::map<std::string, Tensor>& params) {
  for (const ParameterReport::Entry& e : report.frozen)
    if (ckpt.model.count(e.name))
      return FailedPrecondition("checkpoint '", ckpt.path, "' trained '", e.name, "', which this run freezes (",
                                e.reason, "); resume with the --freeze of the run that wrote it");
  for (const auto& [name, t] : params)
    if (!ckpt.model.count(name))
      return FailedPrecondition("checkpoint '", ckpt.path, "' has no '", name,
                                "', which this run trains: it was frozen in the run that wrote it; resume with "
                                "that run's --freeze");
  return Status::Ok();
}

}  // namespace

Status Trainer::Restore(const LoadedCheckpoint& ckpt) {
  AMP_RETURN_IF_ERROR(CheckSameTrainedSet(ckpt, train_.parameters, params_));
  AMP_RETURN_IF_ERROR(CheckCompatible(ckpt.model, ModelState())
                          .WithContext(StrCat("checkpoint '", ckpt.path, "' does not fit the model")));
  if (ckpt.state.step < 0 || ckpt.state.lr_step < 0 || ckpt.state.optimizer_step < 0)
    return InvalidArgument("checkpoint '", ckpt.path, "' has a negative step count");
  if (ckpt.state.precision_plan_hash != plan_hash_ && !config_.force_plan_mismatch)
    return FailedPrecondition("checkpoint '", ckpt.path, "' was written under ",
                              ckpt.state.precision_plan_hash.empty() ? "fp32 training" : "another precision plan",
                              ", this run ", plan_hash_.empty() ? "trains in fp32" : "has a different one",
                              " (--amp, --dtype or the policy changed); pass --force to resume anyway");
  std::optional<LossScaler> scaler;
  if (scaler_) {
    scaler = scaler_;
    if (ckpt.state.scaler.is_object())
      AMP_RETURN_IF_ERROR(scaler->LoadStateJson(ckpt.state.scaler)
                              .WithContext(StrCat("checkpoint '", ckpt.path, "' (loss scaler state)")));
  }
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer, Optimizer::Create(config_.optimizer, dev_));
  AMP_RETURN_IF_ERROR(optimizer->LoadState(ckpt.optimizer, ckpt.state.optimizer_step)
                          .WithContext(StrCat("checkpoint '", ckpt.path, "' (optimizer state)")));
  for (const auto& [name, slot] : optimizer->StateTensors()) {
    std::string param = name.substr(0, name.rfind('.'));
    auto it = params_.find(param);
    if (it == params_.end() || it->second.dims() != slot.dims())
      return InvalidArgument("checkpoint '", ckpt.path, "': optimizer slot '", name,
                             "' does not match a parameter of the model");
  }
  std::map<std::string, Tensor> params, stats;
  for (const auto& [name, t] : params_) params[name] = ckpt.model.at(name).Clone();
  for (const auto& [name, t] : stats_) stats[name] = ckpt.model.at(name).Clone();
  AMP_RETURN_IF_ERROR(SetState(params, stats));
  optimizer_ = std::move(optimizer);
  ShareModelWeights();
  step_ = ckpt.state.step;
  lr_step_ = ckpt.state.lr_step;
  if (scaler_) scaler_ = std::move(scaler);
  return Status::Ok();
}

StatusOr<std::unique_ptr<ir::Graph>> Trainer::TrainedModel(bool inference) const {
  AMP_ASSIGN_OR_RETURN(const FeedMap state, Fp32ModelState());
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, WithInitializers(*model_, state));
  if (inference) AMP_RETURN_IF_ERROR(ToInferenceMode(*g));
  return g;
}

}  // namespace amptrain::executor::train
