// What this CPU offers, detected at run time: cpuid feature bits (with the
// OS's XCR0 consent for AVX / AVX-512 / AMX state), the ISA oneDNN will
// dispatch to (which honours ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA), and what
// follows for low precision:
//   bf16 faster  — AMX-BF16, or AVX512_BF16 whose dot products measure
//                  faster than fp32 FMA, and oneDNN allowed to use it: bf16
//                  ops run oneDNN's bf16 kernels (impl "onednn");
//   otherwise    — bf16 and fp16 are storage only: 2 bytes in memory,
//                  widened to fp32 to compute (kernels "onednn-widened").
//                  oneDNN's own bf16 kernels (avx512_core or better, emulated
//                  without AVX512_BF16) stay available by name.
// `amptrain --version` prints Describe(); the AMP report and the trainer
// print LowPrecisionNote() once.
#pragma once

#include <string>

#include "ir/dtype.h"

namespace amptrain::kernels::cpu {

struct CpuInfo {
  std::string vendor, model;
  // cpuid, with OS support for the register state.
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false, avx_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false, amx_fp16 = false;
  // oneDNN's effective ISA ("avx2", "avx512_core_bf16", ...), after any cap.
  std::string onednn_isa;
  bool onednn_capped = false;  // ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA is set

  bool avx512_core() const { return avx512f && avx512bw && avx512vl && avx512dq; }
  // oneDNN runs its bf16 primitives (native or emulated).
  bool onednn_bf16() const;
  // bf16 arithmetic in hardware, usable by oneDNN: AVX512_BF16 or AMX-BF16.
  bool native_bf16() const;
  // Multiply-adds per second of VDPBF16PS over fp32 FMA on one core,
  // measured at detection (a few ms) on CPUs with AVX512_BF16 but no AMX;
  // 0 where not measured. About 2 on AMD Zen 4, about 1 on Intel cores whose
  // one bf16 dot-product port matches their two FMA ports (AMX hidden).
  double bf16_dot_speedup = 0.0;
  // bf16 computes faster than fp32 here: AMX-BF16, or AVX512_BF16 measured at
  // kBf16FasterThreshold or more. Only then do bf16 ops run oneDNN's own bf16
  // kernels; elsewhere they take the widened fp32 kernels ("onednn-widened"),
  // which are faster than oneDNN's bf16 kernels or their AVX-512 emulation.
  bool bf16_faster() const;
  static constexpr double kBf16FasterThreshold = 1.4;
  // amptrain's own vector loops (optimizer steps): 512-bit where the CPU
  // has AVX-512F, 256-bit where it has AVX2, each only while oneDNN's ISA
  // is at that level too, so ONEDNN_MAX_CPU_ISA=AVX2 caps these loops as
  // well and one machine can test every path.
  // Set at detection (hot loops ask per span).
  bool vector512() const { return vector512_; }
  bool vector256() const { return vector256_; }
  bool vector512_ = false, vector256_ = false;
  // fp16 arithmetic in hardware that amptrain uses: none yet (oneDNN 2.6 has
  // no fp16 CPU kernels), so fp16 is storage only on every CPU.
  bool native_fp16() const { return false; }
};

// Detected once per process.
const CpuInfo& Cpu();

// fp32 FMA throughput of `threads` threads in GFLOP/s (2 per multiply-add):
// independent chains of 512-bit FMAs (256-bit on AVX2 CPUs, or where
// ONEDNN_MAX_CPU_ISA caps the vector loops), the best of a few timings of
// about 10 ms each. 0 where neither is available. For benchmarks:
// the machine's measured peak, against which they rate achieved GFLOP/s.
double MeasureFp32FmaPeak(int threads);

// Several lines: model, the feature flags, oneDNN's ISA, what low precision
// does here.
std::string DescribeCpu();

// One line on how `dtype` (fp16 or bf16) computes on this CPU, e.g. "bf16:
// storage only on this CPU (no AVX512_BF16 or AMX; oneDNN ISA avx2): values
// are widened to fp32 to compute, so expect fp32 speed, not faster".
// Empty for other dtypes.
std::string LowPrecisionNote(ir::DType dtype);

}  // namespace amptrain::kernels::cpu
