// Subcommands of the `amptrain` command line, one file each.
//
// Add<Name>Command registers the subcommand, its flags and --help on `app`.
// When the subcommand is chosen, its action runs once parsing succeeded and
// stores its outcome in `result`; main() turns a non-OK result into one line
// `amptrain: error: <message>` on stderr and exit code 1. Adding a subcommand
// is one new file here and one line in tools/main.cc.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autodiff/loss.h"
#include "executor/data/dataset.h"
#include "executor/train/batch_axis.h"
#include "executor/session.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::tools {

void AddInspectCommand(CLI::App& app, Status& result);  // tools/inspect.cc
void AddRunCommand(CLI::App& app, Status& result);      // tools/run.cc
void AddExportCommand(CLI::App& app, Status& result);   // tools/export.cc
void AddModelsCommand(CLI::App& app, Status& result);   // tools/cmd_models.cc
void AddGradCommand(CLI::App& app, Status& result);     // tools/cmd_grad.cc
void AddBenchCommand(CLI::App& app, Status& result);    // tools/bench.cc
void AddTrainCommand(CLI::App& app, Status& result);    // tools/train.cc
void AddEvalCommand(CLI::App& app, Status& result);     // tools/eval.cc
void AddConvertCommand(CLI::App& app, Status& result);  // tools/convert.cc

// Helpers shared by the subcommands (tools/common.cc).
// "1.5 MiB": a byte count for humans.
std::string HumanBytes(double bytes);
// A value name as a file name: '/', '\\', ':' and control characters become
// '_'; "", "." and ".." become "_".
std::string SanitizeFileName(const std::string& name);
// File names for `names` written into one folder: SanitizeFileName, then
// "_2", "_3", ... for names that collide ("w/1" and "w:1": "w_1", "w_1_2").
std::vector<std::string> UniqueFileNames(const std::vector<std::string>& names);
// Writes each (path, tensor) as .npy, all or nothing: every file goes to a
// temporary name first, and only when all are written are they renamed into
// place; on error no temporary is left and the folder's earlier files stay.
Status WriteNpyFiles(const std::vector<std::pair<std::string, ir::Tensor>>& files);
// Flag validators whose errors read as a person would write them
// ("--batch-size: must be an integer >= 1, got '0'"), unlike CLI11's range
// checks, and that refuse what would silently wrap or saturate (-1 for an
// unsigned seed, 99999999999999999999 for an int64).
CLI::Validator IntAtLeast(int64_t min, int64_t max = INT64_MAX);
CLI::Validator NumberAtLeast(double min);
// A static loss scale: a finite number > 0 that fits a float; nullopt otherwise.
std::optional<float> ParseStaticLossScale(const std::string& text);
// Most CPU threads a flag may ask for.
inline constexpr int64_t kMaxThreads = 1024;
// True when `a` and `b` name the same file (or the same path, if either does not exist yet).
bool SameFile(const std::string& a, const std::string& b);
// The folder that will hold the output file `path` exists and this process
// may create files in it; the error names `flag` and the folder.
Status CheckOutputFolderOf(const std::string& path, const std::string& flag);
// `dir` exists as a writable folder, or is created (with its parents); an
// existing non-folder or an unwritable place is an error naming `flag`.
Status EnsureWritableFolder(const std::string& dir, const std::string& flag);

// The batch size to train or evaluate `model` with. A model exported with a
// fixed batch (every input's dim 0 static and the same) takes only that one:
// it is used when --batch-size was not given (`given`), and a different one
// given is an error that says how to fix it; *fixed is then true, and the
// caller leaves partial batches out. Otherwise `requested`, *fixed false.
StatusOr<int64_t> BatchSizeFor(const ir::Graph& model, int64_t requested, bool given, bool* fixed);
// For an `images:` data set: the decode size ("height", "width", "channels"
// in spec_params) from the model's image input [N, C, H, W] (static C, H, W),
// or from `image_size` ("S" or "HxW", the --image-size flag), which wins;
// channels from the model (3 where its C is not fixed). An error names what
// is missing: a model without one rank-4 input, a dynamic size and no flag.
// `image_resize` > 0 (--image-resize): resize the shorter side to that first
// ("resize"), as torchvision's Resize(256) before CenterCrop(224).
// Other kinds: an error if `image_size` or `image_resize` is given, else nothing.
Status SetImageSize(const ir::Graph& model, const std::string& kind, const std::string& image_size,
                    int64_t image_resize, std::map<std::string, std::string>* spec_params);
// How an image data set's samples (uint8 [C, h, w]) go to the model's one
// image input (float, rank 4, [N, C, H, W] or channels-last [N, H, W, C]):
// where C, H or W is fixed and differs from the data's, `aug` gets the
// Augmentation::fit_* that make every image so (gray to RGB or back, then
// torchvision's Resize + CenterCrop), with a log line saying so. Dims the
// model leaves dynamic take the data's, and such an input's dims (all but
// the batch's) go into `input_dims`, the size the training graph is built
// at (TrainGraphOptions::input_dims). Other data sets and models: nothing.
// `image_size` (--image-size, images: data): an explicit size that the
// model's fixed one would resize is an error instead.
Status FitImages(const ir::Graph& model, const executor::data::Dataset& ds, const std::string& kind,
                 const std::string& image_size, executor::data::Augmentation* aug,
                 std::map<std::string, std::vector<int64_t>>* input_dims);
// --class-axis and --ignore-index (train, eval): classification with a label
// per token or pixel, and labels that count in no loss.
struct LabelFlags {
  std::string class_axis = "auto";  // auto | first | last
  int64_t ignore_index = -100;      // PyTorch's CrossEntropyLoss default
};
void AddLabelFlags(CLI::App* cmd, LabelFlags& flags);
autodiff::ClassAxis ClassAxisOf(const LabelFlags& flags);
// The labels of one sample of `labels` ({} for [N] labels); nothing for float (regression) labels.
std::optional<std::vector<int64_t>> LabelDims(const ir::Tensor& labels);

// --batch-axis (train, eval): sequence-major inputs ([T, B, ...]) read [N, ...]
// data through a Transpose (executor/train/batch_axis.h). ApplyBatchAxes
// rewrites `model` and returns what it moved, for RestoreBatchAxes.
void AddBatchAxisFlag(CLI::App* cmd, std::vector<std::string>& specs);
StatusOr<std::vector<executor::train::BatchAxis>> ApplyBatchAxes(ir::Graph& model, const std::vector<std::string>& specs);

// A model whose sample input takes uint8 (images it normalizes itself: an
// export with the preprocessing inside) gets uint8 image samples as they are,
// with no normalization (the caller drops its own), instead of float32 ones
// it would refuse.
void FeedRawImages(const ir::Graph& model, executor::data::Dataset& ds);

// Warns that a fixed batch leaves the last samples of `what` out.
void WarnLeftOut(int64_t batch, size_t samples, const char* what);

// Warns when `model` has random ops (ir/ops.def's "random" family:
// RandomUniformLike, RandomNormalLike, RandomUniform, RandomNormal,
// Bernoulli), naming their count and the first
// node: they draw in inference too (a training-mode export's
// StochasticDepth drops blocks in `run`; `eval` takes such masks at their
// expectation), so `what` (the outputs) depends on the draws.
void WarnIfModelDraws(const ir::Graph& model, const char* what);

// --reference-ops OP,...: these op types run on the reference kernels (the
// rest as usual), to find which op's kernel an output's error comes from.
void AddReferenceOpsFlag(CLI::App* cmd, std::vector<std::string>& ops);
Status ApplyReferenceOps(const std::vector<std::string>& ops, executor::SessionOptions& options);

// The graph inputs' names, quoted ("'x', 'mask'"), or "none".
std::string InputNames(const ir::Graph& g);
// .npy tensors by graph input name from NAME=FILE.npy specs (FILE.npy alone
// when the model has one input); errors name `flag`, an unknown or repeated
// input, or the file.
StatusOr<std::map<std::string, ir::Tensor>> ReadInputs(const ir::Graph& g, const std::vector<std::string>& specs,
                                                       const std::string& flag);

}  // namespace amptrain::tools
