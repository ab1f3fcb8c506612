// Output paths. amptrain replaces a file by writing a temporary file beside
// it and renaming that over the target, so no partial file is ever visible.
// Renaming over something that is not a regular file would destroy it: run
// as root, `export -o /dev/null` replaced the machine's /dev/null. So an
// existing target must be a regular file (or a symlink, which the rename
// replaces without touching what it points to).
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "ir/status.h"

namespace amptrain::ir {

// Error naming `what` ("model", "report", ...) and `path` when `path` exists
// and is a device, FIFO, socket or folder.
inline Status CheckReplaceableOutput(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Status::Ok();  // absent: created
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return Status::Ok();
  const char* kind = S_ISDIR(st.st_mode)                          ? "a folder"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                     : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                                                                  : "not a regular file";
  return InvalidArgument("the ", what, " output '", path, "' is ", kind,
                         "; amptrain writes regular files only and never replaces anything else");
}

}  // namespace amptrain::ir
