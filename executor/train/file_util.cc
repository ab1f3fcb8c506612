#include "executor/train/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace amptrain::executor::train {

namespace {

Status Errno(const char* what, const std::string& path) {
  int e = errno;
  if (e == ENOENT) return NotFound("cannot ", what, " '", path, "': ", std::strerror(e));
  return IoError("cannot ", what, " '", path, "': ", std::strerror(e));
}

}  // namespace

StatusOr<std::string> ReadFileBytes(const std::string& path) {
  // O_NONBLOCK: a FIFO in place of a checkpoint file cannot block the open
  // (resume would hang instead of falling back); fstat then refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Errno("open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("'", path, "' is not a readable regular file");
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t r = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      Status s = Errno("read", path);
      ::close(fd);
      return s;
    }
    if (r == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(r);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

Status WriteFileSynced(const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("create", path);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      Status s = Errno("write", path);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) {
    Status s = Errno("fsync", path);
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0) return Errno("close", path);
  return Status::Ok();
}

Status SyncDirectory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open directory", path);
  int rc = ::fsync(fd);
  Status s = rc == 0 ? Status::Ok() : Errno("fsync directory", path);
  ::close(fd);
  return s;
}

}  // namespace amptrain::executor::train
