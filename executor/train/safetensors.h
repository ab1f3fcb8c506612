// The Hugging Face safetensors format:
//
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   UTF-8 JSON: {"<name>": {"dtype": "F32", "shape": [2, 3],
//                                      "data_offsets": [begin, end]}, ...,
//                          "__metadata__": {"<key>": "<string>", ...}}
//   rest      the byte buffer; offsets are relative to its start
//
// dtypes: F32 F16 BF16 F64 I64 I32 I8 U8 BOOL (ir::DType's set), data
// little-endian, C order. Writing sorts tensors by name, packs them without
// gaps and pads the header with spaces to a multiple of 8 bytes (as the
// reference implementation does, so the buffer stays aligned).
//
// Reading treats the bytes as untrusted and validates everything, returning
// a Status that names `label` (the file) and the tensor: header length
// within the file and at most 100 MB, JSON that parses, an object at the top
// with no duplicate keys, known dtypes, non-negative integer shapes whose
// element count does not overflow, end - begin == elements * dtype size,
// and offsets that tile the whole buffer with no gap and no overlap.
#pragma once

#include <map>
#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor::train {

struct SafetensorsContents {
  std::map<std::string, ir::Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

StatusOr<std::string> SerializeSafetensors(const std::map<std::string, ir::Tensor>& tensors,
                                           const std::map<std::string, std::string>& metadata);
StatusOr<SafetensorsContents> ParseSafetensors(const std::string& bytes, const std::string& label);

StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path);
// Writes the file in place (no temp file) and fsyncs it; atomicity is the
// caller's (checkpoints write into a temp folder that is renamed).
Status WriteSafetensors(const std::string& path, const std::map<std::string, ir::Tensor>& tensors,
                        const std::map<std::string, std::string>& metadata);

}  // namespace amptrain::executor::train
