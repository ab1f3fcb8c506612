#include "executor/train/tensorboard.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace amptrain::executor::train {

namespace fs = std::filesystem;

namespace {

constexpr std::array<uint32_t, 256> kCrc32cTable = [] {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}();

uint32_t MaskedCrc32c(std::string_view bytes) {
  uint32_t c = Crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// Protobuf wire format: a field is varint(field << 3 | wire type), then its payload.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Field numbers of tensorflow.Event, Summary and Summary.Value.
constexpr uint32_t kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kValueTag = 1, kValueSimpleValue = 2;

constexpr const char* kFileVersion = "brain.Event:2";

void PutVarint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  out += static_cast<char>(v);
}

void PutLittleEndian(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void PutKey(std::string& out, uint32_t field, WireType wire) { PutVarint(out, (uint64_t{field} << 3) | wire); }

void PutBytes(std::string& out, uint32_t field, std::string_view bytes) {
  PutKey(out, field, kLengthDelimited);
  PutVarint(out, bytes.size());
  out.append(bytes);
}

void PutDouble(std::string& out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutKey(out, field, kFixed64);
  PutLittleEndian(out, bits, 8);
}

void PutFloat(std::string& out, uint32_t field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutKey(out, field, kFixed32);
  PutLittleEndian(out, bits, 4);
}

// An Event holding wall_time (now) and step; the caller appends its payload.
std::string EventPrefix(int64_t step) {
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string event;
  PutDouble(event, kEventWallTime, now);
  PutKey(event, kEventStep, kVarint);
  PutVarint(event, static_cast<uint64_t>(step));  // two's complement, as protobuf's int64
  return event;
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

Status ErrnoError(const char* what, const std::string& path) {
  return IoError("cannot ", what, " TensorBoard event file '", path, "': ", std::strerror(errno));
}

}  // namespace

uint32_t Crc32c(std::string_view bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = kCrc32cTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

StatusOr<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::Open(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("the TensorBoard log directory is an empty path");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (fs::exists(dir, ec)) return InvalidArgument("TensorBoard log directory '", dir, "' exists and is not a directory");
    fs::create_directories(dir, ec);
    if (ec) return IoError("cannot create TensorBoard log directory '", dir, "': ", ec.message());
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string base = (fs::path(dir) / StrCat("events.out.tfevents.", seconds, ".", HostName(), ".", ::getpid(),
                                                   ".amptrain"))
                               .string();
  // O_EXCL: a writer opened in the same second by this process takes the next suffix.
  constexpr int kMaxSuffix = 100;
  for (int n = 0; n < kMaxSuffix; ++n) {
    const std::string path = n == 0 ? base : StrCat(base, ".", n);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return ErrnoError("create", path);
    std::FILE* file = ::fdopen(fd, "wb");
    if (file == nullptr) {
      Status s = ErrnoError("open", path);
      ::close(fd);
      return s;
    }
    std::unique_ptr<TensorBoardWriter> writer(new TensorBoardWriter(path, file));
    std::string event = EventPrefix(0);
    PutBytes(event, kEventFileVersion, kFileVersion);
    AMP_RETURN_IF_ERROR(writer->WriteRecord(event));
    AMP_RETURN_IF_ERROR(writer->Flush());
    return writer;
  }
  return IoError("cannot create a TensorBoard event file: '", base, "' and its suffixes .1 to .", kMaxSuffix - 1,
                 " all exist");
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Status TensorBoardWriter::Scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  if (values.empty()) return Status::Ok();
  std::string summary;
  for (const auto& [tag, value] : values) {
    if (tag.empty()) return InvalidArgument("TensorBoard scalar at step ", step, " has an empty tag");
    std::string v;
    PutBytes(v, kValueTag, tag);
    PutFloat(v, kValueSimpleValue, static_cast<float>(value));
    PutBytes(summary, kSummaryValue, v);
  }
  std::string event = EventPrefix(step);
  PutBytes(event, kEventSummary, summary);
  return WriteRecord(event);
}

Status TensorBoardWriter::WriteRecord(std::string_view data) {
  if (file_ == nullptr) return FailedPrecondition("TensorBoard event file '", path_, "' is closed");
  std::string length;
  PutLittleEndian(length, data.size(), 8);
  std::string record = length;
  PutLittleEndian(record, MaskedCrc32c(length), 4);
  record.append(data);
  PutLittleEndian(record, MaskedCrc32c(data), 4);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) return ErrnoError("write", path_);
  return Status::Ok();
}

Status TensorBoardWriter::Flush() {
  if (file_ == nullptr) return FailedPrecondition("TensorBoard event file '", path_, "' is closed");
  if (std::fflush(file_) != 0) return ErrnoError("flush", path_);
  if (::fsync(::fileno(file_)) != 0) return ErrnoError("fsync", path_);
  return Status::Ok();
}

Status TensorBoardWriter::Close() {
  if (file_ == nullptr) return Status::Ok();
  Status flushed = Flush();
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (!flushed.ok()) return flushed;
  return rc == 0 ? Status::Ok() : ErrnoError("close", path_);
}

}  // namespace amptrain::executor::train
