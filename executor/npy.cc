#include "executor/npy.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "ir/file_io.h"
#include "ir/output_path.h"

namespace amptrain::executor {

static_assert(std::endian::native == std::endian::little, "the .npy code assumes a little-endian host");

// The largest .npy file read (docs/limits.md).
constexpr int64_t kMaxNpyBytes = int64_t{4} << 30;

using ir::DType;
using ir::Tensor;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct DescrEntry {
  const char* descr;
  DType dtype;
};
// Accepted spellings; the first spelling of a dtype is the one written.
constexpr DescrEntry kDescrs[] = {
    {"<f4", DType::kFloat32}, {"<f2", DType::kFloat16}, {"<f8", DType::kFloat64}, {"<i8", DType::kInt64},
    {"<i4", DType::kInt32},   {"|i1", DType::kInt8},    {"|u1", DType::kUInt8},   {"|b1", DType::kBool},
    {"<i1", DType::kInt8},    {"=i1", DType::kInt8},    {"<u1", DType::kUInt8},   {"=u1", DType::kUInt8},
    {"<b1", DType::kBool},    {"=b1", DType::kBool},
};

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parser of the header's Python dict literal:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& label) : s_(text), label_(label) {}

  StatusOr<Header> Parse() {
    Header h;
    std::set<std::string> seen;
    SkipSpace();
    if (!Eat('{')) return Error("the header is not a dict");
    while (true) {
      SkipSpace();
      if (Eat('}')) break;
      AMP_ASSIGN_OR_RETURN(std::string key, String());
      if (!seen.insert(key).second) return Error("duplicate key '", key, "'");
      SkipSpace();
      if (!Eat(':')) return Error("expected ':' after key '", key, "'");
      SkipSpace();
      if (key == "descr") {
        AMP_ASSIGN_OR_RETURN(h.descr, String());
      } else if (key == "fortran_order") {
        AMP_ASSIGN_OR_RETURN(h.fortran_order, Bool());
      } else if (key == "shape") {
        AMP_ASSIGN_OR_RETURN(h.shape, Tuple());
      } else {
        return Error("unexpected key '", key, "'");
      }
      SkipSpace();
      if (Eat(',')) continue;
      if (Eat('}')) break;
      return Error("expected ',' or '}' after the value of '", key, "'");
    }
    for (const char* key : {"descr", "fortran_order", "shape"})
      if (!seen.count(key)) return Error("missing key '", key, "'");
    while (pos_ < s_.size()) {  // trailing spaces and Python comments only
      if (s_[pos_] == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(s_[pos_]))) {
        ++pos_;
      } else {
        return Error("unexpected text after the header dict");
      }
    }
    return h;
  }

 private:
  template <class... A> Status Error(const A&... a) const {
    return InvalidArgument(label_, ": bad .npy header: ", a...);
  }
  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  StatusOr<std::string> String() {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return Error("expected a string");
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) return Error("unterminated string");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  StatusOr<bool> Bool() {
    if (s_.compare(pos_, 4, "True") == 0) return pos_ += 4, true;
    if (s_.compare(pos_, 5, "False") == 0) return pos_ += 5, false;
    return Error("fortran_order must be True or False");
  }
  StatusOr<std::vector<int64_t>> Tuple() {
    std::vector<int64_t> dims;
    if (!Eat('(')) return Error("shape must be a tuple");
    while (true) {
      SkipSpace();
      if (Eat(')')) return dims;
      if (pos_ < s_.size() && s_[pos_] == '-') return Error("shape entries must be >= 0");
      if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_])))
        return Error("shape entries must be integers");
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        int digit = s_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return Error("shape entry too large");
        v = v * 10 + digit;
      }
      Eat('L');  // Python 2 longs
      dims.push_back(v);
      SkipSpace();
      if (Eat(')')) return dims;
      if (!Eat(',')) return Error("expected ',' or ')' in shape (entries must be integers)");
    }
  }

  const std::string& s_;
  const std::string& label_;
  size_t pos_ = 0;
};

uint32_t ReadLE(const std::string& bytes, size_t pos, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[pos + i])) << (8 * i);
  return v;
}

std::string ShapeTuple(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += StrCat(i ? ", " : "", dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

StatusOr<Tensor> Widen(const Tensor& bf16) {
  AMP_ASSIGN_OR_RETURN(Tensor f32, Tensor::Zeros(DType::kFloat32, bf16.dims()));
  for (int64_t i = 0; i < bf16.num_elements(); ++i)
    f32.data<float>()[i] = ir::BFloat16ToFloat(bf16.data<uint16_t>()[i]);
  return f32;
}

}  // namespace

StatusOr<Tensor> ParseNpy(const std::string& bytes, const std::string& label) {
  if (bytes.size() < kMagicLen + 2 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    return InvalidArgument(label, ": not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    return Unimplemented(label, ": unsupported .npy format version ", major, ".", minor);
  size_t len_bytes = major == 1 ? 2 : 4;
  size_t start = kMagicLen + 2 + len_bytes;
  if (bytes.size() < start) return InvalidArgument(label, ": truncated .npy header");
  size_t header_len = ReadLE(bytes, kMagicLen + 2, len_bytes);
  if (bytes.size() - start < header_len)
    return InvalidArgument(label, ": truncated .npy header (", header_len, " bytes announced, ", bytes.size() - start,
                           " present)");
  std::string text = bytes.substr(start, header_len);
  AMP_ASSIGN_OR_RETURN(Header h, HeaderParser(text, label).Parse());
  if (h.fortran_order)
    return Unimplemented(label, ": Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  DType dtype = DType::kUndefined;
  for (const DescrEntry& e : kDescrs)
    if (h.descr == e.descr) dtype = e.dtype;
  if (dtype == DType::kUndefined) {
    if (!h.descr.empty() && h.descr[0] == '>')
      return Unimplemented(label, ": big-endian dtype '", h.descr, "' is not supported");
    return Unimplemented(label, ": dtype '", h.descr, "' is not supported (use <f4 <f2 <f8 <i8 <i4 |i1 |u1 |b1)");
  }
  int64_t n = 0;
  size_t es = ir::DTypeSize(dtype);
  if (!ir::CheckedNumElements(h.shape, &n) || n > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(es))
    return InvalidArgument(label, ": shape ", ShapeTuple(h.shape), " is too large");
  size_t data_bytes = static_cast<size_t>(n) * es;
  size_t have = bytes.size() - start - header_len;
  if (have != data_bytes)
    return InvalidArgument(label, ": data is ", have, " bytes, shape ", ShapeTuple(h.shape), " of ", h.descr,
                           " needs ", data_bytes, have < data_bytes ? " (truncated file)" : "");
  AMP_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(dtype, h.shape));
  if (data_bytes) std::memcpy(t.raw(), bytes.data() + start + header_len, data_bytes);
  if (dtype == DType::kBool)
    for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = t.data<uint8_t>()[i] ? 1 : 0;
  return t;
}

StatusOr<Tensor> ReadNpy(const std::string& path) {
  // A FIFO would block forever and /dev/zero never ends (issue 9, F5/F6).
  AMP_ASSIGN_OR_RETURN(std::string bytes, ir::ReadRegularFile(path, kMaxNpyBytes, ".npy file"));
  return ParseNpy(bytes, path);
}

StatusOr<std::string> SerializeNpy(const Tensor& tensor) {
  if (tensor.empty()) return InvalidArgument("cannot write an empty tensor to .npy");
  const Tensor* data = &tensor;
  Tensor widened;
  std::string comment;
  if (tensor.dtype() == DType::kBFloat16) {
    AMP_ASSIGN_OR_RETURN(widened, Widen(tensor));
    data = &widened;
    comment = " # bfloat16 values stored as float32 (numpy has no bfloat16)";
  }
  const char* descr = nullptr;
  for (const DescrEntry& e : kDescrs)
    if (!descr && e.dtype == data->dtype()) descr = e.descr;
  if (!descr) return Unimplemented("dtype ", ir::DTypeName(data->dtype()), " has no .npy encoding");
  std::string dict = StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", ShapeTuple(data->dims()),
                            ", }", comment);
  // magic + version + length field + dict + padding + '\n' is a multiple of 64.
  size_t len_bytes = 2;
  size_t total = kMagicLen + 2 + len_bytes + dict.size() + 1;
  if ((total + 63) / 64 * 64 - (kMagicLen + 2 + len_bytes) > 0xffff) {
    len_bytes = 4;
    total = kMagicLen + 2 + len_bytes + dict.size() + 1;
  }
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(len_bytes == 2 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  out += dict;
  out.append(static_cast<const char*>(data->raw()), data->nbytes());
  return out;
}

Status WriteNpy(const std::string& path, const Tensor& tensor) {
  AMP_RETURN_IF_ERROR(ir::CheckReplaceableOutput(path, ".npy"));
  AMP_ASSIGN_OR_RETURN(std::string bytes, SerializeNpy(tensor));
  std::string tmp = StrCat(path, ".tmp.", getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot create '", tmp, "': ", std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      Status err = IoError("error writing '", tmp, "': ", std::strerror(errno));
      ::close(fd);
      ::unlink(tmp.c_str());
      return err;
    }
    done += static_cast<size_t>(w);
  }
  bool synced = ::fsync(fd) == 0;
  bool closed = ::close(fd) == 0;
  if (!synced || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    Status err = IoError("cannot write '", path, "': ", std::strerror(errno));
    ::unlink(tmp.c_str());
    return err;
  }
  return Status::Ok();
}

}  // namespace amptrain::executor
