#include "kernels/cuda/cublas_api.h"

#include <dlfcn.h>

namespace amptrain::kernels::cuda {

namespace {

#define AMP_STR2_(x) #x
#define AMP_STR_(x) AMP_STR2_(x)
constexpr const char* kLibrary = "libcublas.so." AMP_STR_(CUBLAS_VER_MAJOR);

StatusOr<CublasApi> Load() {
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen((std::string("/usr/local/cuda/lib64/") + kLibrary).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return FailedPrecondition("cannot load cuBLAS (", kLibrary, "): ", dlerror());
  CublasApi api;
  Status missing = Status::Ok();
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn && missing.ok()) missing = FailedPrecondition(kLibrary, " has no ", name);
  };
  bind(api.Create, "cublasCreate_v2");
  bind(api.SetStream, "cublasSetStream_v2");
  bind(api.SetMathMode, "cublasSetMathMode");
  bind(api.GemmEx, "cublasGemmEx");
  bind(api.GemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
  bind(api.GetStatusName, "cublasGetStatusName");
  bind(api.GetStatusString, "cublasGetStatusString");
  if (!missing.ok()) return missing;
  return api;  // the library stays loaded for the process's life
}

}  // namespace

StatusOr<const CublasApi*> Cublas() {
  static const StatusOr<CublasApi> api = Load();
  if (!api.ok()) return api.status();
  return &*api;
}

std::string CublasStatusText(cublasStatus_t status) {
  StatusOr<const CublasApi*> api = Cublas();
  if (!api.ok()) return StrCat("cuBLAS status ", static_cast<int>(status));
  return StrCat((*api)->GetStatusName(status), " (", (*api)->GetStatusString(status), ")");
}

}  // namespace amptrain::kernels::cuda
