#include "ir/file_io.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace amptrain::ir {

const char* NonRegularFileKind(unsigned mode) {
  return S_ISDIR(mode)                    ? "a folder"
         : S_ISFIFO(mode)                 ? "a FIFO, not a regular file"
         : S_ISCHR(mode) || S_ISBLK(mode) ? "a device, not a regular file"
                                          : "not a regular file";
}

StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(what, " '", path, "' does not exist");
    return IoError("cannot open ", what, " '", path, "': ", std::strerror(errno));
  }
  struct stat st {};
  std::string text;
  Status status = Status::Ok();
  if (::fstat(fd, &st) != 0) {
    status = IoError("cannot stat ", what, " '", path, "': ", std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    status = InvalidArgument(what, " '", path, "' is ", NonRegularFileKind(st.st_mode));
  } else if (st.st_size > max_bytes) {
    status = InvalidArgument(what, " '", path, "' has ", st.st_size, " bytes; at most ", max_bytes, " are read");
  } else {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != text.size()) status = IoError("cannot read ", what, " '", path, "': it ended early");
  }
  ::close(fd);
  AMP_RETURN_IF_ERROR(status);
  return text;
}

int MaxBracketDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\' && quote == '"') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      depth = std::max(depth - 1, 0);
    }
  }
  return deepest;
}

}  // namespace amptrain::ir
