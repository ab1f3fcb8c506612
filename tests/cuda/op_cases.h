// The cases of the CUDA-against-CPU op test (cuda_vs_cpu_test.cc, which
// says how each is judged): what a case is, the input makers the families
// share, and one function per family of ops that appends its cases
// (cases_*.cc). A new op's case goes into its family's file.
#pragma once

#include <algorithm>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ir/onnx_dtype.h"
#include "tests/cuda/device_runner.h"

namespace amptrain::kernels::devtest {

using ir::DType;
using ir::OpKind;
using ir::Tensor;

// Random values in [lo, hi) stored as `t` (rounded like Cast).
inline Tensor Random(DType t, std::vector<int64_t> dims, std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
  Tensor x = *Tensor::Zeros(t, std::move(dims));
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < x.num_elements(); ++i) ir::SetElementFromDouble(x, i, u(rng));
  return x;
}

inline Tensor Labels(std::vector<int64_t> dims, int64_t classes, std::mt19937& rng) {
  Tensor y = *Tensor::Zeros(DType::kInt64, std::move(dims));
  std::uniform_int_distribution<int64_t> u(0, classes - 1);
  for (int64_t i = 0; i < y.num_elements(); ++i) y.data<int64_t>()[i] = u(rng);
  return y;
}

struct Case {
  std::string name;
  OpKind op;
  std::function<ir::Attributes(DType)> attrs;
  std::function<std::vector<Tensor>(DType, std::mt19937&)> inputs;
  size_t outputs = 1;
  std::vector<bool> constant;
  std::string cpu_impl = "reference";
  bool bitwise = false;          // outputs and updated inputs must match exactly
  std::vector<size_t> updated;   // inputs the kernel writes in place, compared too
  bool training = true;          // KernelInit::training
  std::vector<bool> unused;      // outputs passed as data == nullptr (skipped by the kernel)
  double tol_factor = 1.0;       // times Tolerance(dtype); see the cuDNN cases
  Seeds seeds;                   // Dropout's node (KernelInit) and run (KernelContext) seeds
  bool same_bytes = false;       // outputs equal the CPU's byte for byte (copies, Dropout)
  // Output dtypes in place of the inferred ones (kUndefined: inferred), per
  // test dtype: a kernel that fuses Casts (KernelEntry::fuses_casts).
  std::function<std::vector<DType>(DType)> output_dtypes;
  // The CUDA side's channels-last inputs and outputs (the CPU side runs
  // plain; the runner converts), for the fp16/bf16 runs: fp32 stays NCHW.
  Layouts cuda_layouts;
};

inline ir::Attributes NoAttrs(DType) { return {}; }

inline std::function<std::vector<Tensor>(DType, std::mt19937&)> Shapes(std::vector<std::vector<int64_t>> dims,
                                                                        double lo = -1.0, double hi = 1.0) {
  return [dims, lo, hi](DType t, std::mt19937& rng) {
    std::vector<Tensor> in;
    for (const auto& d : dims) in.push_back(Random(t, d, rng, lo, hi));
    return in;
  };
}

inline Case Unary(const std::string& name, OpKind op, double lo = -3.0, double hi = 3.0,
           std::function<ir::Attributes(DType)> attrs = NoAttrs) {
  return Case{name, op, std::move(attrs), Shapes({{4, 33, 17}}, lo, hi)};
}

inline ir::Attributes Attr(const std::string& name, ir::AttrValue v) {
  ir::Attributes a;
  a.Set(name, std::move(v));
  return a;
}

// Values distinct within every [H, W] plane (a shuffled (k - P/2) / 64 for k
// < P = H * W <= 256: exact in fp16 and bf16), so that no max-pooling window
// has a tie whose winner the devices could pick differently.
inline Tensor Distinct(DType t, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor x = *Tensor::Zeros(t, dims);
  const int64_t plane = dims[dims.size() - 2] * dims.back();
  std::vector<int64_t> perm(static_cast<size_t>(plane));
  for (int64_t p = 0; p * plane < x.num_elements(); ++p) {
    for (int64_t k = 0; k < plane; ++k) perm[static_cast<size_t>(k)] = k;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t k = 0; k < plane; ++k)
      ir::SetElementFromDouble(x, p * plane + k, static_cast<double>(perm[static_cast<size_t>(k)] - plane / 2) / 64.0);
  }
  return x;
}

using Ints = std::vector<int64_t>;

// Window attributes: kernel_shape (pools only, when given), strides, pads,
// dilations (when given), group, plus `extra`.
inline std::function<ir::Attributes(DType)> Window(Ints kernel, Ints strides, Ints pads, Ints dilations = {},
                                              int64_t group = 1, std::vector<std::pair<std::string, ir::AttrValue>> extra = {}) {
  return [=](DType) {
    ir::Attributes a;
    if (!kernel.empty()) a.Set("kernel_shape", kernel);
    a.Set("strides", strides);
    a.Set("pads", pads);
    if (!dilations.empty()) a.Set("dilations", dilations);
    if (group != 1) a.Set("group", group);
    for (const auto& [k, v] : extra) a.Set(k, v);
    return a;
  };
}

// A scalar of dtype t holding v rounded to t.
inline Tensor ScalarOf(DType t, double v) {
  Tensor s = *Tensor::Zeros(t, {});
  ir::SetElementFromDouble(s, 0, v);
  return s;
}

// A bool tensor, each element true with probability 0.7 (DropoutGrad's mask).
inline Tensor Mask(std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor m = *Tensor::Zeros(DType::kBool, std::move(dims));
  std::bernoulli_distribution keep(0.7);
  for (int64_t i = 0; i < m.num_elements(); ++i) m.data<uint8_t>()[i] = keep(rng) ? 1 : 0;
  return m;
}

// An int64 (or int32) vector tensor.
inline Tensor IntVector(const Ints& v, DType t = DType::kInt64) {
  Tensor x = *Tensor::Zeros(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) ir::SetElementFromDouble(x, static_cast<int64_t>(i), static_cast<double>(v[i]));
  return x;
}

// Random integers in [lo, hi) of dtype t (int32/int64): Gather's indices.
inline Tensor Indices(DType t, std::vector<int64_t> dims, int64_t lo, int64_t hi, std::mt19937& rng) {
  Tensor x = *Tensor::Zeros(t, std::move(dims));
  std::uniform_int_distribution<int64_t> u(lo, hi - 1);
  for (int64_t i = 0; i < x.num_elements(); ++i) ir::SetElementFromDouble(x, i, static_cast<double>(u(rng)));
  return x;
}

// Random integers in [lo, hi) of dtype t (any integer dtype).
inline Tensor RandomInts(DType t, std::vector<int64_t> dims, int64_t lo, int64_t hi, std::mt19937& rng) {
  return Indices(t, std::move(dims), lo, hi, rng);
}

// Random values of magnitude [0.25, 2) and either sign (Mod's divisors: no
// zeros, whose NaN the devices may sign differently).
inline Tensor NonZero(DType t, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor x = Random(t, std::move(dims), rng, 0.25, 2.0);
  std::bernoulli_distribution neg(0.5);
  for (int64_t i = 0; i < x.num_elements(); ++i)
    if (neg(rng)) ir::SetElementFromDouble(x, i, -x.GetAsDouble(i));
  return x;
}

// Test parameters print as their names, not as bytes.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// The families.
void AddCudnnCases(std::vector<Case>& c);                 // cases_cudnn.cc
void AddShapeAndDropoutCases(std::vector<Case>& c);       // cases_shape.cc
void AddNormAndMovementCases(std::vector<Case>& c);       // cases_norm_movement.cc
void AddLossPadResizeIntegerCases(std::vector<Case>& c);  // cases_loss_pad_resize.cc

}  // namespace amptrain::kernels::devtest
