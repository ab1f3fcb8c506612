#include "executor/train/train_loop.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <set>

namespace amptrain::executor::train {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

Status CheckConfig(const LoopConfig& c, const data::Dataset* test) {
  if (c.batch_size < 1) return InvalidArgument("batch size must be >= 1, got ", c.batch_size);
  if (c.steps < 0) return InvalidArgument("steps must be >= 0, got ", c.steps);
  if (c.steps == 0 && c.epochs < 1) return InvalidArgument("epochs must be >= 1, got ", c.epochs);
  if (c.log_every < 1) return InvalidArgument("the progress interval must be >= 1 step, got ", c.log_every);
  if (c.checkpoint_every < 0) return InvalidArgument("the checkpoint interval must be >= 0, got ", c.checkpoint_every);
  if ((c.resume == "auto" || c.resume == "auto-or-fresh") && c.checkpoint_dir.empty())
    return InvalidArgument("--resume ", c.resume, " needs a checkpoint folder");
  if (c.evaluate && !test) return InvalidArgument("evaluation needs a test set");
  return Status::Ok();
}

// The checkpoint to resume from: "" for a fresh start.
// "auto": the newest valid checkpoint, a fresh start when there is none at
// all, an error when every one is broken; "auto-or-fresh" starts fresh then.
StatusOr<std::string> ResumePath(const LoopConfig& c) {
  if (c.resume != "auto" && c.resume != "auto-or-fresh") return c.resume;
  StatusOr<std::string> latest = FindLatestCheckpoint(c.checkpoint_dir);
  if (latest.ok()) return *latest;
  if (latest.status().code() == StatusCode::kNotFound) {
    spdlog::info("no checkpoint in '{}' to resume from: starting from scratch", c.checkpoint_dir);
    return std::string();
  }
  if (c.resume == "auto-or-fresh" && latest.status().code() == StatusCode::kFailedPrecondition) {
    spdlog::warn("{}; starting from scratch (--resume auto-or-fresh); those checkpoints are kept", latest.status().message());
    return std::string();
  }
  return Status(latest.status().code(),
                StrCat("--resume auto: ", latest.status().message(), " (--resume auto-or-fresh starts from scratch)"));
}

// The loop's running state between progress reports and epochs.
struct Window {
  double loss_sum = 0.0;
  int64_t correct = 0, count = 0, labelled = 0, steps = 0;
  Clock::time_point start = Clock::now();
  double train_s = 0.0;  // time spent in training steps
  void Reset() { *this = Window(); }
};

}  // namespace

StatusOr<LoopResult> RunTraining(Trainer& trainer, const data::Dataset& train, const data::Dataset* test,
                                 const LoopConfig& config, const LoopCallbacks& callbacks) {
  AMP_RETURN_IF_ERROR(CheckConfig(config, test));
  data::BatchIterator batches(train, config.batch_size, /*shuffle=*/true, config.seed, config.normalization,
                              config.augmentation, config.drop_last);
  AMP_RETURN_IF_ERROR(batches.status());
  const int64_t per_epoch = batches.batches_per_epoch();
  if (per_epoch < 1)
    return InvalidArgument(train.size() == 0 ? std::string("the training set has no samples")
                                             : StrCat("the training set's ", train.size(),
                                                      " samples do not fill one batch of ", config.batch_size));
  const int64_t total = config.steps > 0 ? config.steps : config.epochs * per_epoch;

  AMP_ASSIGN_OR_RETURN(std::string resume, ResumePath(config));
  if (!resume.empty()) {
    AMP_ASSIGN_OR_RETURN(LoadedCheckpoint ckpt, LoadCheckpoint(resume));
    if (ckpt.state.config.contains("batch_size") && ckpt.state.config["batch_size"] != config.batch_size)
      spdlog::warn("checkpoint '{}' was trained with batch size {}; resuming with {}", resume,
                   ckpt.state.config["batch_size"].dump(), config.batch_size);
    AMP_RETURN_IF_ERROR(trainer.Restore(ckpt));
    batches.Seek({ckpt.state.data_epoch, ckpt.state.data_index});
    spdlog::info("resumed from '{}' at step {} (epoch {})", resume, trainer.step(), ckpt.state.data_epoch + 1);
  }

  LoopResult result;
  result.start_step = trainer.step();
  int64_t saved_step = -1;
  // Checkpoints that keep_last may delete: this run's own, and the one it resumed from.
  std::set<int64_t> prunable;
  if (!resume.empty()) prunable.insert(trainer.step());
  auto save = [&]() -> Status {
    if (config.checkpoint_dir.empty() || saved_step == trainer.step()) return Status::Ok();
    TrainerState state = trainer.State();
    data::BatchIterator::Cursor cursor = batches.cursor();
    state.epoch = cursor.epoch;
    state.data_epoch = cursor.epoch;
    state.data_index = cursor.index;
    state.config = config.config;
    prunable.insert(trainer.step());
    AMP_ASSIGN_OR_RETURN(const auto model_state, trainer.HostModelState());
    AMP_ASSIGN_OR_RETURN(const auto optimizer_state, trainer.HostOptimizerState());
    AMP_RETURN_IF_ERROR(
        SaveCheckpoint(config.checkpoint_dir, model_state, optimizer_state, state, config.keep_last, &prunable));
    saved_step = trainer.step();
    result.last_checkpoint = CheckpointPath(config.checkpoint_dir, trainer.step());
    if (callbacks.on_checkpoint) callbacks.on_checkpoint(result.last_checkpoint);
    return Status::Ok();
  };

  const Clock::time_point run_start = Clock::now();
  Window window, epoch;
  double train_s = 0.0;
  int64_t images = 0;
  int64_t epoch_step = (batches.cursor().index + config.batch_size - 1) / config.batch_size;
  bool warned_empty_test = false;
  auto end_epoch = [&]() -> Status {
    EpochSummary s;
    s.epoch = batches.cursor().epoch;
    s.step = trainer.step();
    s.train_loss = epoch.labelled ? epoch.loss_sum / static_cast<double>(epoch.labelled) : 0.0;
    s.train_accuracy = epoch.labelled ? static_cast<double>(epoch.correct) / static_cast<double>(epoch.labelled) : 0.0;
    batches.NextEpoch();
    epoch_step = 0;
    epoch.Reset();
    AMP_RETURN_IF_ERROR(save());  // before evaluating: a failing evaluation never costs the trained epoch
    // A fixed batch larger than the test split leaves nothing to evaluate.
    const bool evaluable = config.evaluate && test->size() > 0 &&
                           (!config.drop_last || static_cast<int64_t>(test->size()) >= config.batch_size);
    if (evaluable) {
      data::BatchIterator test_batches(*test, config.batch_size, /*shuffle=*/false, 0, config.normalization,
                                       data::FitOnly(config.augmentation),
                                       config.drop_last);
      AMP_ASSIGN_OR_RETURN(s.test, trainer.Evaluate(test_batches));
      s.evaluated = true;
    } else if (config.evaluate && !warned_empty_test) {
      if (test->size() == 0)
        spdlog::warn("the test split is empty: epochs are not evaluated");
      else
        spdlog::warn("the test split's {} samples are fewer than the model's fixed batch of {}: epochs are not "
                     "evaluated",
                     test->size(), config.batch_size);
      warned_empty_test = true;
    }
    s.elapsed_s = Seconds(run_start, Clock::now());
    if (callbacks.on_epoch_end) callbacks.on_epoch_end(s);
    return Status::Ok();
  };

  data::Batch batch;
  while (trainer.step() < total) {
    AMP_ASSIGN_OR_RETURN(bool more, batches.Next(&batch));
    if (!more) {
      AMP_RETURN_IF_ERROR(end_epoch());
      continue;
    }
    const Clock::time_point t0 = Clock::now();
    AMP_ASSIGN_OR_RETURN(StepResult r, trainer.Step(batch));
    const double dt = Seconds(t0, Clock::now());
    train_s += dt;
    images += r.count;
    ++epoch_step;
    for (Window* w : {&window, &epoch}) {
      if (r.labelled > 0) w->loss_sum += r.loss * static_cast<double>(r.labelled);
      w->correct += r.correct;
      w->count += r.count;
      w->labelled += r.labelled;
      ++w->steps;
      w->train_s += dt;
    }
    const int64_t step = trainer.step();
    if (config.checkpoint_every > 0 && step % config.checkpoint_every == 0) AMP_RETURN_IF_ERROR(save());
    if (step % config.log_every == 0 || step == total) {
      Progress p;
      p.epoch = batches.cursor().epoch;
      p.step = step;
      p.total_steps = total;
      p.epoch_step = epoch_step;
      p.steps_per_epoch = per_epoch;
      p.loss = window.labelled ? window.loss_sum / static_cast<double>(window.labelled) : 0.0;
      p.accuracy = window.labelled ? static_cast<double>(window.correct) / static_cast<double>(window.labelled) : 0.0;
      p.lr = r.lr;
      p.loss_scale = trainer.scaler() ? trainer.scaler()->scale() : 1.0f;
      p.skipped_steps = r.skipped_steps;
      p.images_per_s = window.train_s > 0 ? static_cast<double>(window.count) / window.train_s : 0.0;
      p.eta_s = static_cast<double>(total - step) * Seconds(window.start, Clock::now()) / static_cast<double>(window.steps);
      p.elapsed_s = Seconds(run_start, Clock::now());
      if (callbacks.on_progress) callbacks.on_progress(p);
      window.Reset();
    }
    if (epoch_step == per_epoch) AMP_RETURN_IF_ERROR(end_epoch());
  }
  AMP_RETURN_IF_ERROR(save());
  result.steps = trainer.step();
  result.images_per_s = train_s > 0 ? static_cast<double>(images) / train_s : 0.0;
  return result;
}

}  // namespace amptrain::executor::train
