// The training loop around a Trainer: epochs of shuffled batches, progress
// reports, evaluation at the end of each epoch, checkpoints and resume.
//
//   LoopConfig loop;  loop.epochs = 5;  loop.checkpoint_dir = "ckpt";
//   AMP_ASSIGN_OR_RETURN(LoopResult r, RunTraining(*trainer, train_set, &test_set, loop, callbacks));
//
// Data order: BatchIterator(train, batch_size, shuffle, seed = loop.seed),
// so the batches are a pure function of (seed, epoch, cursor). The run takes
// `steps` steps (or epochs x batches per epoch); an epoch ends when the
// iterator runs out: then the test set is evaluated and a checkpoint is
// written (its data cursor points at the next epoch's start). Checkpoints are
// also written every `checkpoint_every` steps and after the last step.
//
// Resume ("auto": the newest complete checkpoint in checkpoint_dir, none =
// a fresh start; or a checkpoint folder): the checkpoint is loaded and
// validated, checked against the model, and the trainer state and data cursor
// are restored before the first step, so N steps straight and N/2 + resume +
// N/2 give bitwise-equal parameters and optimizer state. Any error stops the
// run before a later checkpoint is written; earlier checkpoints stay.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "executor/data/dataset.h"
#include "executor/train/trainer.h"
#include "ir/status.h"

namespace amptrain::executor::train {

struct LoopConfig {
  int64_t epochs = 5;
  int64_t steps = 0;  // > 0: overrides epochs
  int64_t batch_size = 128;
  bool drop_last = false;  // leave out partial batches (train and test): a model of fixed batch size
  uint64_t seed = 0;  // data order and augmentation
  data::Normalization normalization;
  data::Augmentation augmentation;
  std::string checkpoint_dir;    // "" = no checkpoints
  int64_t checkpoint_every = 0;  // steps; 0 = epoch ends and the last step only
  int keep_last = 3;
  std::string resume;            // "", "auto", "auto-or-fresh" or a checkpoint folder
  int64_t log_every = 50;        // steps between progress reports
  bool evaluate = true;          // at each epoch end (needs a test set)
  nlohmann::json config;         // saved in every checkpoint's trainer state
};

struct Progress {
  int64_t epoch = 0, step = 0, total_steps = 0;
  int64_t epoch_step = 0, steps_per_epoch = 0;
  double loss = 0.0;       // mean over the steps since the last report
  double accuracy = 0.0;   // training top-1 over the same steps
  float lr = 0.0f;
  float loss_scale = 1.0f;    // the scaler's scale after the latest step (1 without scaling)
  int64_t skipped_steps = 0;  // inf/NaN steps skipped so far
  double images_per_s = 0.0;
  double eta_s = 0.0;      // estimated seconds to the last step
  double elapsed_s = 0.0;  // since this run started
};

struct EpochSummary {
  int64_t epoch = 0, step = 0;
  double train_loss = 0.0, train_accuracy = 0.0;
  bool evaluated = false;
  EvalResult test;
  double elapsed_s = 0.0;  // wall clock since this run started (evaluation included)
};

struct LoopCallbacks {
  std::function<void(const Progress&)> on_progress;       // every log_every steps and at the last step
  std::function<void(const EpochSummary&)> on_epoch_end;
  std::function<void(const std::string& path)> on_checkpoint;
};

struct LoopResult {
  int64_t start_step = 0, steps = 0;  // first step of this run; steps taken in all
  double images_per_s = 0.0;          // training throughput of this run (evaluation excluded)
  std::string last_checkpoint;
};

StatusOr<LoopResult> RunTraining(Trainer& trainer, const data::Dataset& train, const data::Dataset* test,
                                 const LoopConfig& config, const LoopCallbacks& callbacks = {});

}  // namespace amptrain::executor::train
