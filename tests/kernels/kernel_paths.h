// The oneDNN kernels' precision paths, for suites that check each path
// against the reference kernels:
//   fp32 "onednn"                 every CPU;
//   bf16 "onednn"          native oneDNN bf16 primitives: oneDNN ISA
//                          avx512_core or better (AVX512_BF16 for hardware
//                          bf16; plain AVX-512 emulates it);
//   bf16 "onednn-widened"  2-byte storage widened to fp32 around the fp32
//   fp16 "onednn-widened"  primitive: every CPU.
// A path this CPU cannot run skips with the missing instruction set named;
// the same check still runs on the widened path, which runs everywhere.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "kernels/cpu/cpu_info.h"

namespace amptrain::kernels::testing {

struct KernelPath {
  ir::DType dtype;
  const char* impl;
  const char* name;  // test-name suffix
};

inline const std::vector<KernelPath>& KernelPaths() {
  static const std::vector<KernelPath> paths = {
      {ir::DType::kFloat32, "onednn", "fp32"},
      {ir::DType::kBFloat16, "onednn", "bf16_native"},
      {ir::DType::kBFloat16, "onednn-widened", "bf16_widened"},
      {ir::DType::kFloat16, "onednn-widened", "fp16_widened"},
  };
  return paths;
}

// The direct kernels (kernels/cpu/direct_kernels.h), impl "direct": fp32,
// bf16 and fp16 on every CPU with the build's baseline (AVX, F16C).
inline const std::vector<KernelPath>& DirectPaths() {
  static const std::vector<KernelPath> paths = {
      {ir::DType::kFloat32, "direct", "fp32"},
      {ir::DType::kBFloat16, "direct", "bf16"},
      {ir::DType::kFloat16, "direct", "fp16"},
  };
  return paths;
}

// Empty when this CPU runs `p`; otherwise the skip reason.
inline std::string MissingIsa(const KernelPath& p) {
  const cpu::CpuInfo& c = cpu::Cpu();
  if (p.dtype == ir::DType::kBFloat16 && std::string(p.impl) == "onednn" && !c.onednn_bf16())
    return "oneDNN's native bf16 kernels need AVX-512 (avx512_core; AVX512_BF16 for hardware bf16): this CPU's "
           "oneDNN ISA is " + c.onednn_isa + (c.onednn_capped ? " (capped)" : "") +
           "; the bf16_widened case checks bf16 here";
  return "";
}

inline void PrintTo(const KernelPath& p, std::ostream* os) { *os << p.name; }

struct PathName {
  std::string operator()(const ::testing::TestParamInfo<KernelPath>& info) const { return info.param.name; }
};

}  // namespace amptrain::kernels::testing

// INSTANTIATE_KERNEL_PATHS(Suite): one instance of each TEST_P of Suite per path.
#define INSTANTIATE_KERNEL_PATHS(suite)                                                          \
  INSTANTIATE_TEST_SUITE_P(Paths, suite, ::testing::ValuesIn(::amptrain::kernels::testing::KernelPaths()), \
                           ::amptrain::kernels::testing::PathName())

// INSTANTIATE_DIRECT_PATHS(Suite): one instance of each TEST_P of Suite per dtype of the direct kernels.
#define INSTANTIATE_DIRECT_PATHS(suite)                                                          \
  INSTANTIATE_TEST_SUITE_P(Paths, suite, ::testing::ValuesIn(::amptrain::kernels::testing::DirectPaths()), \
                           ::amptrain::kernels::testing::PathName())

// First statement of a TEST_P over KernelPath.
#define SKIP_UNLESS_CPU_RUNS(path)                                          \
  do {                                                                      \
    if (std::string why = ::amptrain::kernels::testing::MissingIsa(path); !why.empty()) \
      GTEST_SKIP() << why;                                                  \
  } while (0)
