// Reading untrusted files whole. The path is opened with O_NONBLOCK (a FIFO
// cannot block the open) and checked with fstat to be a regular file (a
// FIFO, a device such as /dev/zero, a socket or a folder is refused before
// any read) of at most `max_bytes`; errors name `what` and the path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace amptrain::ir {

// `what`: "policy file", ".npy file", ... as the errors should name it.
StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes, const std::string& what);

// What a path of this st_mode is, for an error about a file that should be
// regular: "a folder", "a FIFO, not a regular file", "a device, not a
// regular file" or "not a regular file".
const char* NonRegularFileKind(unsigned mode);

// The deepest nesting of [ and { outside quoted strings ('...' or "..."), so
// that a JSON or YAML document is bounded before a recursive parser (or
// nlohmann's recursive dump()) overflows the stack on it: 100,000 levels did.
int MaxBracketDepth(std::string_view text);

}  // namespace amptrain::ir
