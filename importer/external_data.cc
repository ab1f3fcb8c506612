// External tensor data, resolved safely under the model's folder.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "importer/tensor_proto.h"

namespace amptrain::importer {

namespace {

struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: to the end of the file
};

StatusOr<int64_t> ParseNonNegative(const std::string& key, const std::string& text) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    return InvalidArgument("external data ", key, " '", text, "' is not a non-negative integer");
  return static_cast<int64_t>(std::strtoll(text.c_str(), nullptr, 10));
}

StatusOr<ExternalRef> ParseRef(const onnx::TensorProto& proto) {
  ExternalRef ref;
  bool has_location = false;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      ref.location = kv.value();
      has_location = true;
    } else if (kv.key() == "offset") {
      AMP_ASSIGN_OR_RETURN(ref.offset, ParseNonNegative("offset", kv.value()));
    } else if (kv.key() == "length") {
      AMP_ASSIGN_OR_RETURN(ref.length, ParseNonNegative("length", kv.value()));
    }  // "checksum" and unknown keys carry nothing we need
  }
  if (!has_location || ref.location.empty()) return InvalidArgument("external data has no location");
  return ref;
}

// Rejects absolute paths, ".." components, NUL bytes and backslashes; returns the components.
StatusOr<std::vector<std::string>> SplitLocation(const std::string& location) {
  if (location.find('\0') != std::string::npos || location.find('\\') != std::string::npos)
    return InvalidArgument("external data location '", location, "' contains a NUL byte or a backslash");
  if (location.front() == '/') return InvalidArgument("external data location '", location, "' is an absolute path");
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    std::string part = location.substr(start, end - start);
    if (part == "..") return InvalidArgument("external data location '", location, "' has a '..' component");
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    start = end + 1;
  }
  if (parts.empty()) return InvalidArgument("external data location '", location, "' names no file");
  return parts;
}

StatusOr<std::string> CanonicalDir(const std::string& dir) {
  char buf[PATH_MAX];
  if (!realpath(dir.c_str(), buf)) return NotFound("model folder '", dir, "': ", std::strerror(errno));
  return std::string(buf);
}

// Walks the components with lstat: no symlinks anywhere, a regular file at the end.
StatusOr<std::string> ResolveUnder(const std::string& canonical_dir, const std::string& location) {
  AMP_ASSIGN_OR_RETURN(auto parts, SplitLocation(location));
  std::string path = canonical_dir;
  for (size_t i = 0; i < parts.size(); ++i) {
    path += "/" + parts[i];
    struct stat st;
    if (lstat(path.c_str(), &st) != 0)
      return NotFound("external data file '", location, "': ", std::strerror(errno));
    if (S_ISLNK(st.st_mode)) return InvalidArgument("external data location '", location, "' goes through a symlink");
    bool last = i + 1 == parts.size();
    if (last ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode))
      return InvalidArgument("external data location '", location, "' is not a regular file inside the model folder");
  }
  char buf[PATH_MAX];
  if (!realpath(path.c_str(), buf)) return NotFound("external data file '", location, "': ", std::strerror(errno));
  std::string real(buf);
  if (real.compare(0, canonical_dir.size() + 1, canonical_dir + "/") != 0)
    return InvalidArgument("external data location '", location, "' resolves outside the model folder");
  return real;
}

Status ReadAt(int fd, void* dst, size_t nbytes, int64_t offset) {
  auto* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < nbytes) {
    ssize_t r = pread(fd, out + done, nbytes - done, static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return IoError("short read: ", r < 0 ? std::strerror(errno) : "unexpected end of file");
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

// The checks on the open file `fd`, then the tensor: it is allocated only
// once the file is known to hold its bytes.
StatusOr<ir::Tensor> ReadChecked(int fd, const ExternalRef& ref, ir::DType dtype, std::vector<int64_t> dims,
                                 size_t nbytes) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return IoError("external data file '", ref.location, "' is not a regular file");
  // A hard link may name a file outside the model's folder that no path
  // check can see (issue 9, F17; the CVE-2026-34446 pattern).
  if (st.st_nlink > 1)
    return InvalidArgument("external data file '", ref.location, "' has ", st.st_nlink,
                           " hard links; it could be a file outside the model's folder, so it is not read");
  const int64_t size = st.st_size;
  const int64_t length = ref.length < 0 ? size - std::min(ref.offset, size) : ref.length;
  if (ref.offset > size || length > size - ref.offset)
    return OutOfRange("external data offset ", ref.offset, " + length ", length, " is past the end of '",
                      ref.location, "' (", size, " bytes)");
  if (static_cast<uint64_t>(length) != nbytes)
    return InvalidArgument("external data length ", length, " differs from the tensor's ", nbytes, " bytes");
  AMP_ASSIGN_OR_RETURN(ir::Tensor t, ir::Tensor::Zeros(dtype, std::move(dims)));
  AMP_RETURN_IF_ERROR(ReadAt(fd, t.raw(), nbytes, ref.offset));
  return t;
}

StatusOr<ir::Tensor> ReadExternal(const onnx::TensorProto& proto, const std::string& model_dir, ir::DType dtype,
                                  std::vector<int64_t> dims, size_t nbytes) {
  AMP_ASSIGN_OR_RETURN(ExternalRef ref, ParseRef(proto));
  AMP_ASSIGN_OR_RETURN(std::string dir, CanonicalDir(model_dir));
  AMP_ASSIGN_OR_RETURN(std::string path, ResolveUnder(dir, ref.location));
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open external data file '", ref.location, "': ", std::strerror(errno));
  StatusOr<ir::Tensor> t = ReadChecked(fd, ref, dtype, std::move(dims), nbytes);
  close(fd);
  return t;
}

}  // namespace

StatusOr<ir::Tensor> ReadExternalData(const onnx::TensorProto& proto, const std::string& model_dir, ir::DType dtype,
                                      std::vector<int64_t> dims, size_t nbytes) {
  StatusOr<ir::Tensor> t = ReadExternal(proto, model_dir, dtype, std::move(dims), nbytes);
  if (!t.ok()) return t.status().WithContext(StrCat("tensor '", proto.name(), "'"));
  return t;
}

}  // namespace amptrain::importer
