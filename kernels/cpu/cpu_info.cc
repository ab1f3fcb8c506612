#include "kernels/cpu/cpu_info.h"

#include <cpuid.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace amptrain::kernels::cpu {

namespace {

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs Cpuid(unsigned leaf, unsigned sub = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) r = Regs{};
  return r;
}

uint64_t Xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool Bit(unsigned reg, int bit) { return (reg >> bit) & 1u; }

const char* IsaName(dnnl::cpu_isa isa) {
  using I = dnnl::cpu_isa;
  switch (isa) {
    case I::sse41: return "sse41";
    case I::avx: return "avx";
    case I::avx2: return "avx2";
    case I::avx2_vnni: return "avx2_vnni";
    case I::avx512_mic: return "avx512_mic";
    case I::avx512_mic_4ops: return "avx512_mic_4ops";
    case I::avx512_core: return "avx512_core";
    case I::avx512_core_vnni: return "avx512_core_vnni";
    case I::avx512_core_bf16: return "avx512_core_bf16";
    case I::avx512_core_amx: return "avx512_core_amx";
    case I::all: return "all";
  }
  return "unknown";
}

#if defined(__x86_64__)
// The bf16 dot-product probe: rounds of 12 independent 512-bit instructions
// (enough to fill two pipelines of latency 4-6), FMA (16 multiply-adds each)
// against VDPBF16PS (32 each). The accumulators' sum is returned so that the
// loops are not optimized away.
constexpr int kProbeChains = 12;
constexpr int64_t kProbeRounds = 20000;

template <class Fn>
double Seconds(Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The sum of the accumulators' first lanes.
__attribute__((target("avx512f"))) float SumFirstLanes(const __m512* acc) {
  float out[16], sum = 0.0f;
  for (int k = 0; k < kProbeChains; ++k) {
    _mm512_storeu_ps(out, acc[k]);
    sum += out[0];
  }
  return sum;
}

__attribute__((target("avx512f"))) float FmaRounds(int64_t rounds) {
  __m512 acc[kProbeChains];
  for (int k = 0; k < kProbeChains; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
  const __m512 a = _mm512_set1_ps(0.5f), b = _mm512_set1_ps(0.25f);
  for (int64_t r = 0; r < rounds; ++r)
    for (int k = 0; k < kProbeChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
  return SumFirstLanes(acc);
}

__attribute__((target("avx512f,avx512bf16"))) float DpBf16Rounds(int64_t rounds) {
  __m512 acc[kProbeChains];
  for (int k = 0; k < kProbeChains; ++k) acc[k] = _mm512_setzero_ps();
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3a83);  // bf16 1e-3
  for (int64_t r = 0; r < rounds; ++r)
    for (int k = 0; k < kProbeChains; ++k) acc[k] = _mm512_dpbf16_ps(acc[k], a, a);
  return SumFirstLanes(acc);
}

// The same FMA rounds on 256-bit registers (AVX2 CPUs).
__attribute__((target("avx2,fma"))) float FmaRounds256(int64_t rounds) {
  __m256 acc[kProbeChains];
  for (int k = 0; k < kProbeChains; ++k) acc[k] = _mm256_set1_ps(static_cast<float>(k));
  const __m256 a = _mm256_set1_ps(0.5f), b = _mm256_set1_ps(0.25f);
  for (int64_t r = 0; r < rounds; ++r)
    for (int k = 0; k < kProbeChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
  float out[8], sum = 0.0f;
  for (int k = 0; k < kProbeChains; ++k) {
    _mm256_storeu_ps(out, acc[k]);
    sum += out[0];
  }
  return sum;
}

// Multiply-adds per second of VDPBF16PS over those of fp32 FMA, on this
// thread: the fastest of five interleaved timings of each (a few ms in all),
// so that a descheduled timing does not decide.
double MeasureBf16DotSpeedup() {
  volatile float sink = 0.0f;
  double fma = 1e30, dp = 1e30;
  for (int i = 0; i < 5; ++i) {
    fma = std::min(fma, Seconds([&] { sink = sink + FmaRounds(kProbeRounds); }));
    dp = std::min(dp, Seconds([&] { sink = sink + DpBf16Rounds(kProbeRounds); }));
  }
  return fma > 0.0 && dp > 0.0 ? (32.0 / dp) / (16.0 / fma) : 0.0;
}
#endif

CpuInfo Detect() {
  CpuInfo info;
  Regs v = Cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor, &v.b, 4);
  std::memcpy(vendor + 4, &v.d, 4);
  std::memcpy(vendor + 8, &v.c, 4);
  info.vendor = vendor;
  if (Cpuid(0x80000000).a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      Regs r = Cpuid(0x80000002 + i);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    info.model = brand;
    while (!info.model.empty() && info.model.back() == ' ') info.model.pop_back();
    info.model.erase(0, info.model.find_first_not_of(' '));
  }
  const unsigned max_leaf = v.a;
  Regs l1 = Cpuid(1);
  const bool osxsave = Bit(l1.c, 27);
  const uint64_t xcr0 = osxsave ? Xcr0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;                // XMM, YMM
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;         // XTILECFG, XTILEDATA
  info.fma = os_avx && Bit(l1.c, 12);
  info.f16c = os_avx && Bit(l1.c, 29);
  if (max_leaf >= 7) {
    Regs l7 = Cpuid(7), l71 = Cpuid(7, 1);
    info.avx2 = os_avx && Bit(l7.b, 5);
    info.avx512f = os_avx512 && Bit(l7.b, 16);
    info.avx512dq = os_avx512 && Bit(l7.b, 17);
    info.avx512bw = os_avx512 && Bit(l7.b, 30);
    info.avx512vl = os_avx512 && Bit(l7.b, 31);
    info.avx512_vnni = os_avx512 && Bit(l7.c, 11);
    info.avx512_fp16 = os_avx512 && Bit(l7.d, 23);
    info.amx_bf16 = os_amx && Bit(l7.d, 22);
    info.amx_tile = os_amx && Bit(l7.d, 24);
    info.amx_int8 = os_amx && Bit(l7.d, 25);
    info.avx_vnni = os_avx && Bit(l71.a, 4);
    info.avx512_bf16 = os_avx512 && Bit(l71.a, 5);
    info.amx_fp16 = os_amx && Bit(l71.a, 21);
  }
  info.onednn_isa = IsaName(dnnl::get_effective_cpu_isa());
  info.onednn_capped = std::getenv("ONEDNN_MAX_CPU_ISA") != nullptr || std::getenv("DNNL_MAX_CPU_ISA") != nullptr;
  info.vector512_ = info.avx512f && info.onednn_isa.rfind("avx512", 0) == 0;
  info.vector256_ = info.avx2 && (info.vector512_ || info.onednn_isa.rfind("avx2", 0) == 0);
#if defined(__x86_64__)
  // AMX is far faster than either; without AVX512_BF16 there is nothing to probe.
  if (info.avx512_bf16 && !info.amx_bf16) info.bf16_dot_speedup = MeasureBf16DotSpeedup();
#endif
  return info;
}

std::string Flags(const CpuInfo& c) {
  std::string out;
  auto add = [&](bool have, const char* name) {
    if (!have) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(c.avx2, "avx2");
  add(c.fma, "fma");
  add(c.f16c, "f16c");
  add(c.avx_vnni, "avx_vnni");
  add(c.avx512f, "avx512f");
  add(c.avx512bw, "avx512bw");
  add(c.avx512vl, "avx512vl");
  add(c.avx512dq, "avx512dq");
  add(c.avx512_vnni, "avx512_vnni");
  add(c.avx512_bf16, "avx512_bf16");
  add(c.avx512_fp16, "avx512_fp16");
  add(c.amx_tile, "amx_tile");
  add(c.amx_bf16, "amx_bf16");
  add(c.amx_int8, "amx_int8");
  add(c.amx_fp16, "amx_fp16");
  return out.empty() ? "(none of the listed)" : out;
}

}  // namespace

bool CpuInfo::onednn_bf16() const {
  return onednn_isa == "avx512_core" || onednn_isa == "avx512_core_vnni" || onednn_isa == "avx512_core_bf16" ||
         onednn_isa == "avx512_core_amx";
}

bool CpuInfo::native_bf16() const {
  return (avx512_bf16 && (onednn_isa == "avx512_core_bf16" || onednn_isa == "avx512_core_amx")) ||
         (amx_bf16 && onednn_isa == "avx512_core_amx");
}

bool CpuInfo::bf16_faster() const {
  if (amx_bf16 && onednn_isa == "avx512_core_amx") return true;
  return native_bf16() && bf16_dot_speedup >= kBf16FasterThreshold;
}

const CpuInfo& Cpu() {
  static const CpuInfo info = Detect();
  return info;
}

double MeasureFp32FmaPeak(int threads) {
#if defined(__x86_64__)
  const bool wide = Cpu().vector512(), narrow = Cpu().vector256() && Cpu().fma;
  if (!wide && !narrow) return 0.0;
  const int lanes = wide ? 16 : 8;
  // 24M FMAs per thread per timing, about 10 ms: long beside waking threads
  // that sleep at barriers (OMP_WAIT_POLICY=passive); the first timing warms up.
  const int64_t rounds = 2000000;
  threads = std::max(threads, 1);
  double best = 0.0;
  volatile float sink = 0.0f;
  for (int i = 0; i < 6; ++i) {
    const double s = Seconds([&] {
      float local = 0.0f;
#pragma omp parallel for num_threads(threads) schedule(static, 1) reduction(+ : local)
      for (int t = 0; t < threads; ++t) local += wide ? FmaRounds(rounds) : FmaRounds256(rounds);
      sink = sink + local;
    });
    if (s > 0.0) best = std::max(best, 2.0 * lanes * kProbeChains * static_cast<double>(rounds) * threads / s / 1e9);
  }
  return best;
#else
  (void)threads;
  return 0.0;
#endif
}

namespace {

// "1.9x"
std::string Times(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx", ratio);
  return buf;
}

}  // namespace

std::string LowPrecisionNote(ir::DType dtype) {
  const CpuInfo& c = Cpu();
  const std::string isa = "oneDNN ISA " + c.onednn_isa + (c.onednn_capped ? ", capped" : "");
  if (dtype == ir::DType::kBFloat16) {
    if (c.bf16_faster())
      return "bf16: native on this CPU (" + std::string(c.amx_bf16 ? "AMX-BF16" : "AVX512_BF16") + "; " + isa +
             (c.amx_bf16 ? "" : "; bf16 dot products measured at " + Times(c.bf16_dot_speedup) + " fp32 FMA") +
             "): faster than fp32";
    if (c.native_bf16())
      return "bf16: AVX512_BF16 without AMX on this CPU (" + isa + "; bf16 dot products measured at " +
             Times(c.bf16_dot_speedup) +
             " fp32 FMA, not faster): values are stored in 2 bytes and widened to fp32 to compute, so expect fp32 "
             "speed at best";
    return "bf16: storage only on this CPU (no AVX512_BF16 or AMX; " + isa +
           "): values are widened to fp32 to compute, so expect fp32 speed at best, not faster";
  }
  if (dtype == ir::DType::kFloat16)
    return "fp16: storage only on this CPU (amptrain has no CPU fp16 arithmetic" +
           std::string(c.avx512_fp16 ? ", although it has AVX512_FP16" : "; no AVX512_FP16") + "; " + isa +
           "): values are widened to fp32 to compute, so expect fp32 speed at best, not faster";
  return "";
}

std::string DescribeCpu() {
  const CpuInfo& c = Cpu();
  std::ostringstream s;
  s << "cpu: " << (c.model.empty() ? c.vendor : c.model) << "\n"
    << "cpu flags: " << Flags(c) << "\n"
    << "onednn isa: " << c.onednn_isa
    << (c.onednn_capped ? " (capped by ONEDNN_MAX_CPU_ISA/DNNL_MAX_CPU_ISA)" : "") << "\n"
    << LowPrecisionNote(ir::DType::kBFloat16) << "\n"
    << LowPrecisionNote(ir::DType::kFloat16) << "\n";
  return s.str();
}

}  // namespace amptrain::kernels::cpu
