#include "executor/data/byte_source.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ir/file_io.h"

namespace amptrain::executor::data {

namespace {
constexpr size_t kInputChunk = size_t{1} << 18;     // compressed bytes per fread
constexpr uint64_t kMaxInflateRatio = 1032;         // deflate's worst case is ~1032:1
constexpr uint64_t kMaxCall = uint64_t{1} << 30;    // zlib counts in 32-bit uInt
}  // namespace

struct ByteSource::Inflater {
  z_stream strm{};
  std::vector<unsigned char> in = std::vector<unsigned char>(kInputChunk);
  bool member_ended = false;  // the last inflate() call finished a gzip member
  bool input_eof = false;
  uint64_t consumed = 0;      // compressed bytes read from the file
  ~Inflater() { inflateEnd(&strm); }
};

ByteSource::ByteSource(std::string path) : path_(std::move(path)) {}

StatusOr<std::unique_ptr<ByteSource>> ByteSource::Open(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return NotFound("data file '", path, "' does not exist");
  if (!S_ISREG(st.st_mode)) return InvalidArgument("data file '", path, "' is ", ir::NonRegularFileKind(st.st_mode));
  std::unique_ptr<ByteSource> src(new ByteSource(path));
  src->file_ = std::fopen(path.c_str(), "rb");
  if (!src->file_) return IoError("cannot open data file '", path, "': ", std::strerror(errno));
  src->file_size_ = static_cast<uint64_t>(st.st_size);
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, src->file_);
  std::rewind(src->file_);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    src->gzip_ = true;
    src->inflater_ = std::make_unique<Inflater>();
    if (inflateInit2(&src->inflater_->strm, 16 + MAX_WBITS) != Z_OK)
      return Internal("zlib inflateInit2 failed for '", path, "'");
  }
  return src;
}

ByteSource::~ByteSource() {
  if (file_) std::fclose(file_);
}

uint64_t ByteSource::MaxRemaining() const {
  if (!gzip_) return file_size_ - std::min(file_size_, produced_);
  const Inflater& z = *inflater_;
  uint64_t compressed_left = file_size_ - std::min(file_size_, z.consumed) + z.strm.avail_in;
  return compressed_left * kMaxInflateRatio + (uint64_t{1} << 16);
}

StatusOr<uint64_t> ByteSource::Inflate(void* dst, uint64_t n) {
  Inflater& z = *inflater_;
  z.strm.next_out = static_cast<Bytef*>(dst);
  z.strm.avail_out = static_cast<uInt>(n);
  while (z.strm.avail_out > 0) {
    if (z.strm.avail_in == 0 && !z.input_eof) {
      size_t got = std::fread(z.in.data(), 1, z.in.size(), file_);
      if (std::ferror(file_)) return IoError("read error in '", path_, "'");
      z.consumed += got;
      z.input_eof = got == 0;
      z.strm.next_in = z.in.data();
      z.strm.avail_in = static_cast<uInt>(got);
    }
    if (z.strm.avail_in == 0) {
      if (z.member_ended) break;  // clean end of the last member
      return InvalidArgument("gzip stream of '", path_, "' is truncated (ends after ", z.consumed,
                             " compressed bytes)");
    }
    if (z.member_ended) {  // another member follows (concatenated gzip)
      inflateReset(&z.strm);
      z.member_ended = false;
    }
    int ret = inflate(&z.strm, Z_NO_FLUSH);
    if (ret == Z_STREAM_END) {
      z.member_ended = true;
    } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
      return InvalidArgument("gzip stream of '", path_, "' is corrupt: ", z.strm.msg ? z.strm.msg : zError(ret));
    }
  }
  return n - z.strm.avail_out;
}

StatusOr<uint64_t> ByteSource::ReadSome(void* dst, uint64_t n) {
  uint64_t total = 0;
  auto* out = static_cast<unsigned char*>(dst);
  while (total < n) {
    uint64_t want = std::min(n - total, kMaxCall);
    uint64_t got = 0;
    if (gzip_) {
      AMP_ASSIGN_OR_RETURN(got, Inflate(out + total, want));
    } else {
      got = std::fread(out + total, 1, want, file_);
      if (std::ferror(file_)) return IoError("read error in '", path_, "'");
    }
    total += got;
    if (got < want) break;
  }
  produced_ += total;
  if (produced_ > kMaxDataBytes)
    return InvalidArgument("data file '", path_, "' holds more than ", kMaxDataBytes, " bytes (the limit)");
  return total;
}

Status ByteSource::ReadExact(void* dst, uint64_t n, const std::string& what) {
  uint64_t before = produced_;
  if (n > MaxRemaining())
    return InvalidArgument("data file '", path_, "' is truncated: ", what, " needs ", n, " bytes at offset ", before,
                           " but the file cannot hold them", gzip_ ? " (gzip)" : "");
  AMP_ASSIGN_OR_RETURN(uint64_t got, ReadSome(dst, n));
  if (got < n)
    return InvalidArgument("data file '", path_, "' is truncated: ", what, " needs ", n, " bytes at offset ", before,
                           ", only ", got, " remain");
  return Status::Ok();
}

StatusOr<std::string> ByteSource::ReadAll(uint64_t cap) {
  std::string out;
  if (!gzip_) {
    uint64_t left = MaxRemaining();
    if (left > cap) return InvalidArgument("data file '", path_, "' is larger than the limit of ", cap, " bytes");
    out.resize(left);
    AMP_RETURN_IF_ERROR(ReadExact(out.data(), left, "the file's contents"));
    AMP_RETURN_IF_ERROR(ExpectEnd());
    return out;
  }
  constexpr uint64_t kChunk = uint64_t{1} << 22;
  while (true) {
    size_t at = out.size();
    out.resize(at + kChunk);
    AMP_ASSIGN_OR_RETURN(uint64_t got, ReadSome(out.data() + at, kChunk));
    out.resize(at + got);
    if (out.size() > cap)
      return InvalidArgument("data file '", path_, "' inflates to more than the limit of ", cap, " bytes");
    if (got < kChunk) return out;
  }
}

Status ByteSource::ExpectEnd() {
  unsigned char byte;
  AMP_ASSIGN_OR_RETURN(uint64_t got, ReadSome(&byte, 1));
  if (got != 0) return InvalidArgument("data file '", path_, "' has trailing data after byte ", produced_ - 1);
  return Status::Ok();
}

}  // namespace amptrain::executor::data
