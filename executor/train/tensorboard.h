// A dependency-free writer of TensorBoard event files (scalars only).
//
// An event file, DIR/events.out.tfevents.<unix seconds>.<hostname>.<pid>.amptrain,
// is a sequence of TFRecords, all integers little-endian:
//   uint64 length | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
//   masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xa282ead8, c = crc32c(x) (Castagnoli)
// Each record's data is a serialized tensorflow.Event protobuf, written by hand:
//   Event   { 1: double wall_time; 2: int64 step; 3: string file_version; 5: Summary summary }
//   Summary { 1: repeated Value value }
//   Value   { 1: string tag; 2: float simple_value }
// The first record carries file_version "brain.Event:2"; every Scalars() call
// appends one Event whose Summary holds all its values.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/status.h"

namespace amptrain::executor::train {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `bytes`, unmasked.
uint32_t Crc32c(std::string_view bytes);

class TensorBoardWriter {
 public:
  // Creates `dir` (and its parents) if missing and opens a new event file in
  // it. An existing file is never overwritten: a name already taken gets a
  // ".1", ".2"... suffix. A `dir` that exists and is not a directory is an
  // InvalidArgument naming it.
  static StatusOr<std::unique_ptr<TensorBoardWriter>> Open(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // Appends scalars {tag -> value} at `step`, stored as float (TensorBoard's
  // simple_value). Tags must be non-empty; an empty `values` writes nothing.
  // Buffered: call Flush() to make the records visible and durable.
  Status Scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  // fflush + fsync.
  Status Flush();
  // Flushes, fsyncs and closes the file; later Scalars/Flush calls fail and a
  // second Close is a no-op.
  // The destructor closes an open file too, but cannot report an error.
  Status Close();

  const std::string& path() const { return path_; }

 private:
  TensorBoardWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  Status WriteRecord(std::string_view data);

  std::string path_;
  std::FILE* file_;
};

}  // namespace amptrain::executor::train
