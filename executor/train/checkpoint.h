// Training checkpoints: data only, written atomically.
//
// Layout of one checkpoint, DIR/ckpt-<step, 8+ digits>/:
//   model.safetensors      parameters (fp32 masters) and BatchNormalization
//                          running statistics, by the model's initializer names
//   optimizer.safetensors  optimizer slots (Optimizer::StateTensors())
//   trainer_state.json     {"format": "amptrain.checkpoint", "version": 1,
//                           "step", "epoch", "lr_step", "optimizer_step",
//                           "data_cursor": {"epoch", "index"}, "rng_state",
//                           "precision_plan_hash", "config", "loss_scaler",
//                           "files": {"<file>": {"bytes", "sha256"}},
//                           "checksum": SHA-256 of this object's compact dump
//                           without "checksum"}
//
// Atomicity (TESTING.md): everything is written into
// DIR/.tmp-ckpt-<step>-<pid>/, each file and then that folder are fsynced,
// the folder is renamed to its final name and DIR is fsynced. A process
// killed at any moment leaves every earlier checkpoint complete; the
// leftover temp folder is ignored by FindLatestCheckpoint and removed by the
// next SaveCheckpoint once its process is gone. Re-saving an existing step
// replaces it (the old folder is moved aside first, then deleted). One
// writing process per DIR is assumed.
//
// Loading verifies the size and SHA-256 of every file and the state's own
// checksum, so a flipped or truncated byte is a clean error naming the file.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor::train {

struct TrainerState {
  int64_t step = 0;            // training steps taken (names the folder)
  int64_t epoch = 0;
  int64_t lr_step = 0;         // applied steps: the LR schedule's position
  int64_t optimizer_step = 0;  // Optimizer::step_count()
  int64_t data_epoch = 0, data_index = 0;  // the data cursor
  nlohmann::json config;       // the run's configuration, as the CLI parsed it
  nlohmann::json scaler;       // LossScaler::StateJson()
  uint64_t rng_state = 0;
  std::string precision_plan_hash;
};

// DIR/ckpt-<step as 8+ digits>.
std::string CheckpointPath(const std::string& dir, int64_t step);

// Writes checkpoint `state.step` into `dir` (created if missing), then keeps
// the newest `keep_last` checkpoints with a step <= state.step, deleting the
// older ones (keep_last <= 0 keeps all). Checkpoints with a larger step (from
// an abandoned run) are left alone, and so is every step not in `prunable`
// when it is given (the training loop passes the steps its own run wrote).
Status SaveCheckpoint(const std::string& dir, const std::map<std::string, ir::Tensor>& model,
                      const std::map<std::string, ir::Tensor>& optimizer, const TrainerState& state, int keep_last,
                      const std::set<int64_t>* prunable = nullptr);

struct LoadedCheckpoint {
  std::map<std::string, ir::Tensor> model, optimizer;
  TrainerState state;
  std::string path;
};

// Loads and validates the checkpoint folder `path` (see above); a folder
// named ckpt-<n> must also hold step n.
StatusOr<LoadedCheckpoint> LoadCheckpoint(const std::string& path);

// The newest checkpoint in `dir` that loads and validates (for
// `--resume auto`); temp folders are ignored and invalid checkpoints are
// skipped with a warning. NotFound when `dir` holds no checkpoint at all;
// FailedPrecondition listing what is wrong with each when none is valid.
StatusOr<std::string> FindLatestCheckpoint(const std::string& dir);

// OK when `ckpt` and `model` hold the same names with the same dtypes and
// dims; otherwise InvalidArgument naming the first difference in name order.
Status CheckCompatible(const std::map<std::string, ir::Tensor>& ckpt, const std::map<std::string, ir::Tensor>& model);

}  // namespace amptrain::executor::train
