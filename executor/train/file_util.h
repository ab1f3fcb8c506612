// Small POSIX file helpers for durable writes (checkpoints, safetensors).
// Errors are Statuses naming the path and the system's reason.
#pragma once

#include <string>
#include <string_view>

#include "ir/status.h"

namespace amptrain::executor::train {

// The whole file; NotFound when it does not exist.
StatusOr<std::string> ReadFileBytes(const std::string& path);
// Creates/truncates `path`, writes `bytes`, fsyncs and closes it.
Status WriteFileSynced(const std::string& path, std::string_view bytes);
// fsyncs a directory so renames and creations inside it are durable.
Status SyncDirectory(const std::string& path);

}  // namespace amptrain::executor::train
