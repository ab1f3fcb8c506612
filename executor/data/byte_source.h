// ByteSource: a sequential reader of a data file that may be gzip-compressed.
//
// Gzip is recognised by its magic bytes (1f 8b), not the file name, and is
// inflated through zlib in streaming fashion (concatenated members are
// read as one stream, as gunzip does). Reads are exact: a file or gzip
// stream that ends early, a corrupt deflate stream or a bad CRC is a Status
// naming the file. The output is capped (kMaxDataBytes per file), and
// MaxRemaining() bounds what the rest of the file can still produce
// (deflate's maximum ratio is 1032:1), so callers reject a header that
// promises more than the file can hold before they allocate.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"

namespace amptrain::executor::data {

inline constexpr uint64_t kMaxDataBytes = uint64_t{2} << 30;  // 2 GiB per file

class ByteSource {
 public:
  static StatusOr<std::unique_ptr<ByteSource>> Open(const std::string& path);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Reads exactly n bytes; `what` names them in the error ("the IDX header").
  Status ReadExact(void* dst, uint64_t n, const std::string& what);
  // Reads everything that is left; fails beyond `cap` bytes.
  StatusOr<std::string> ReadAll(uint64_t cap = kMaxDataBytes);
  // OK when nothing is left to read; an error naming the file otherwise.
  Status ExpectEnd();
  // An upper bound on the bytes still to come.
  uint64_t MaxRemaining() const;

  bool gzip() const { return gzip_; }
  const std::string& path() const { return path_; }

 private:
  struct Inflater;
  explicit ByteSource(std::string path);
  // Reads up to n bytes; fewer only at the end of the data.
  StatusOr<uint64_t> ReadSome(void* dst, uint64_t n);
  StatusOr<uint64_t> Inflate(void* dst, uint64_t n);

  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t file_size_ = 0;
  uint64_t produced_ = 0;  // bytes handed out so far
  bool gzip_ = false;
  std::unique_ptr<Inflater> inflater_;
};

}  // namespace amptrain::executor::data
