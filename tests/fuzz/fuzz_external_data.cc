// libFuzzer target: external tensor data (importer/tensor_proto.h,
// TensorFromProto with data_location EXTERNAL), the path resolution and
// offset/length checks of external_data.cc.
//
// The harness builds one TensorProto per input from the bytes (libFuzzer's
// FuzzedDataProvider): its dtype and dims, and its location, offset and
// length entries, either picked from the names below or taken as raw text.
// The model folder is made once per process:
//   model/weights.bin       4096 bytes      model/sub/w.bin    512 bytes
//   model/empty.bin         0 bytes         model/dir.bin/     a folder
//   model/link.bin     -> ../outside.bin    (a symlink to a file outside)
//   model/linkdir      -> ..                (a symlink to the folder above)
//   model/hard.bin          a hard link to ../outside-hard.bin
//   model/fifo              a FIFO (reading it would block)
// Every byte inside the model folder is below 0x80; every byte of the files
// outside is 0xEE. So besides "no crash, no hang": a tensor that loads must
// hold no byte >= 0x80, or data from outside the folder was read.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "importer/tensor_proto.h"

namespace {

namespace fs = std::filesystem;
std::string g_root, g_model;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_external_data: %s\n", what.c_str());
  std::abort();
}

void Write(const std::string& path, size_t n, bool outside) {
  std::string bytes(n, '\xee');
  if (!outside)
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>((i * 37 + 11) & 0x7f);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  if (!f) Fail("cannot write " + path);
}

const char* const kLocations[] = {
    "weights.bin", "sub/w.bin", "./weights.bin", "sub//w.bin", "empty.bin", "dir.bin", "link.bin",
    "linkdir/outside.bin", "linkdir/model/weights.bin", "hard.bin", "fifo", "sub/../weights.bin",
    "../outside.bin", "/etc/passwd", "missing.bin", "sub", ".", "weights.bin/x", "sub\\w.bin",
};

const onnx::TensorProto::DataType kTypes[] = {
    onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT16, onnx::TensorProto::BFLOAT16, onnx::TensorProto::DOUBLE,
    onnx::TensorProto::INT64, onnx::TensorProto::INT32,   onnx::TensorProto::INT8,     onnx::TensorProto::UINT8,
    onnx::TensorProto::BOOL,  onnx::TensorProto::STRING,  onnx::TensorProto::UNDEFINED,
};

std::string Number(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return std::to_string(in.ConsumeIntegralInRange<int64_t>(0, 5000));
    case 1: return std::to_string(in.ConsumeIntegral<int64_t>());
    case 2: return std::to_string(in.ConsumeIntegral<uint64_t>());
    default: return in.ConsumeRandomLengthString(24);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char dir[] = "/tmp/amptrain-fuzz-external-XXXXXX";
  if (!::mkdtemp(dir)) Fail("mkdtemp failed");
  g_root = dir;
  g_model = g_root + "/model";
  std::atexit([] { fs::remove_all(g_root); });  // libFuzzer ends with exit()
  fs::create_directories(g_model + "/sub");
  fs::create_directories(g_model + "/dir.bin");
  Write(g_model + "/weights.bin", 4096, false);
  Write(g_model + "/sub/w.bin", 512, false);
  Write(g_model + "/empty.bin", 0, false);
  Write(g_root + "/outside.bin", 4096, true);
  Write(g_root + "/outside-hard.bin", 4096, true);
  fs::create_symlink("../outside.bin", g_model + "/link.bin");
  fs::create_directory_symlink("..", g_model + "/linkdir");
  fs::create_hard_link(g_root + "/outside-hard.bin", g_model + "/hard.bin");
  if (::mkfifo((g_model + "/fifo").c_str(), 0600) != 0) Fail("mkfifo failed");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  onnx::TensorProto proto;
  proto.set_name("t");
  proto.set_data_type(in.PickValueInArray(kTypes));
  const int rank = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < rank; ++i)
    proto.add_dims(in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-1, 70) : in.ConsumeIntegral<int64_t>());
  proto.set_data_location(in.ConsumeIntegralInRange<int>(0, 7) == 0 ? onnx::TensorProto::DEFAULT
                                                                     : onnx::TensorProto::EXTERNAL);
  const int entries = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < entries; ++i) {
    auto* kv = proto.add_external_data();
    switch (in.ConsumeIntegralInRange<int>(0, 4)) {
      case 0:
      case 1:
        kv->set_key("location");
        kv->set_value(in.ConsumeBool() ? std::string(in.PickValueInArray(kLocations))
                                       : in.ConsumeRandomLengthString(64));
        break;
      case 2: kv->set_key("offset"); kv->set_value(Number(in)); break;
      case 3: kv->set_key("length"); kv->set_value(Number(in)); break;
      default:
        kv->set_key(in.ConsumeRandomLengthString(12));
        kv->set_value(in.ConsumeRandomLengthString(12));
    }
  }
  if (in.ConsumeBool()) {  // raw bytes too (the reader must not mix them up); kept below 0x80
    std::string raw = in.ConsumeRandomLengthString(64);
    for (char& c : raw) c = static_cast<char>(c & 0x7f);
    proto.set_raw_data(raw);
  }

  amptrain::StatusOr<amptrain::ir::Tensor> t = amptrain::importer::TensorFromProto(proto, g_model);
  if (!t.ok()) return 0;
  const auto* bytes = static_cast<const uint8_t*>(t->raw());
  for (size_t i = 0; i < t->nbytes(); ++i)
    if (bytes[i] >= 0x80) Fail("external data from outside the model folder was read");
  return 0;
}
