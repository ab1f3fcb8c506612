// IDX files (LeCun's MNIST format) and MNIST-layout directories.
#include <sys/stat.h>

#include <cstring>

#include "executor/data/byte_source.h"
#include "executor/data/loaders.h"
#include "ir/file_io.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

const char* IdxTypeName(unsigned code) {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "short";
    case 0x0C: return "int";
    case 0x0D: return "float";
    case 0x0E: return "double";
    default: return nullptr;
  }
}

// `dir`/`name` or `dir`/`name`.gz, whichever exists; one that exists and is
// not a regular file (a FIFO would block the read) is named for what it is.
StatusOr<std::string> FindIdxFile(const std::string& kind, const std::string& dir, const std::string& name) {
  const std::string raw = dir + "/" + name;
  for (const std::string& path : {raw, raw + ".gz"}) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) continue;
    if (S_ISREG(st.st_mode)) return path;
    return InvalidArgument(kind, ": '", path, "' is ", ir::NonRegularFileKind(st.st_mode));
  }
  return NotFound(kind, ": neither '", raw, "' nor '", raw, ".gz' exists",
                  kind == "fashion-mnist" ? " (Debian: apt install dataset-fashion-mnist)" : "");
}

// The folder that holds the IDX files: `dir` itself, or where torchvision's
// datasets.MNIST / FashionMNIST(root) put them (root/MNIST/raw,
// root/FashionMNIST/raw; or that folder's parent or raw/ given). The first
// that has the training images (plain or .gz) wins; else `dir`, whose missing
// file the caller then names.
std::string ResolveIdxDir(const std::string& kind, const std::string& dir) {
  const std::string sub = kind == "fashion-mnist" ? "FashionMNIST" : "MNIST";
  for (const std::string& d : {dir, dir + "/raw", dir + "/" + sub + "/raw"}) {
    for (const char* gz : {"", ".gz"}) {
      struct stat st{};
      if (::stat((d + "/train-images-idx3-ubyte" + gz).c_str(), &st) == 0) return d;
    }
  }
  return dir;
}

}  // namespace

StatusOr<Tensor> ReadIdxFile(const std::string& path) {
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> src, ByteSource::Open(path));
  unsigned char magic[4];
  AMP_RETURN_IF_ERROR(src->ReadExact(magic, 4, "the IDX magic"));
  if (magic[0] != 0 || magic[1] != 0 || !IdxTypeName(magic[2]) || magic[3] < 1 || magic[3] > 4) {
    return InvalidArgument("'", path, "' is not an IDX file: magic bytes ", int{magic[0]}, " ", int{magic[1]}, " ",
                           int{magic[2]}, " ", int{magic[3]}, " (expected 0 0 <type> <rank 1..4>)");
  }
  if (magic[2] != 0x08)
    return Unimplemented("IDX file '", path, "' holds ", IdxTypeName(magic[2]), " elements; only unsigned byte is supported");
  const int rank = magic[3];
  unsigned char raw_dims[16];
  AMP_RETURN_IF_ERROR(src->ReadExact(raw_dims, 4 * rank, "the IDX dimensions"));
  std::vector<int64_t> dims(rank);
  uint64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    const unsigned char* b = raw_dims + 4 * i;
    dims[i] = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | int64_t{b[3]};
    count *= static_cast<uint64_t>(dims[i]);  // each factor < 2^32 and we stop above 2^31
    if (count > kMaxDataBytes)
      return InvalidArgument("IDX file '", path, "' promises more than ", kMaxDataBytes, " bytes (the limit)");
  }
  if (count > src->MaxRemaining())
    return InvalidArgument("IDX file '", path, "' is truncated: its header promises ", count,
                           " bytes of data but at most ", src->MaxRemaining(), " remain");
  AMP_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kUInt8, dims));
  AMP_RETURN_IF_ERROR(src->ReadExact(t.raw(), count, "the IDX data"));
  AMP_RETURN_IF_ERROR(src->ExpectEnd());
  return t;
}

StatusOr<Dataset> LoadIdxDir(const std::string& kind, const std::string& given_dir, const std::string& split) {
  const std::string dir = ResolveIdxDir(kind, given_dir);
  const std::string prefix = split == "train" ? "train" : "t10k";
  AMP_ASSIGN_OR_RETURN(std::string images_path, FindIdxFile(kind, dir, prefix + "-images-idx3-ubyte"));
  AMP_ASSIGN_OR_RETURN(std::string labels_path, FindIdxFile(kind, dir, prefix + "-labels-idx1-ubyte"));
  AMP_ASSIGN_OR_RETURN(Tensor images, ReadIdxFile(images_path));
  AMP_ASSIGN_OR_RETURN(Tensor raw_labels, ReadIdxFile(labels_path));
  if (images.rank() != 3)
    return InvalidArgument(kind, ": '", images_path, "' has rank ", images.rank(), ", expected 3 (N, H, W)");
  if (raw_labels.rank() != 1)
    return InvalidArgument(kind, ": '", labels_path, "' has rank ", raw_labels.rank(), ", expected 1 (N)");
  const int64_t n = images.dims()[0];
  if (raw_labels.dims()[0] != n)
    return InvalidArgument(kind, ": '", images_path, "' holds ", n, " images but '", labels_path, "' holds ",
                           raw_labels.dims()[0], " labels");
  Dataset ds;
  ds.num_classes = 10;
  ds.sample_dims = {1, images.dims()[1], images.dims()[2]};
  AMP_ASSIGN_OR_RETURN(ds.samples, images.Reshaped({n, 1, images.dims()[1], images.dims()[2]}));
  AMP_ASSIGN_OR_RETURN(ds.labels, Tensor::Zeros(DType::kInt64, {n}));
  const uint8_t* src = raw_labels.data<uint8_t>();
  int64_t* dst = ds.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  AMP_RETURN_IF_ERROR(CheckLabels(ds.labels, ds.num_classes, labels_path));
  return ds;
}

}  // namespace amptrain::executor::data
