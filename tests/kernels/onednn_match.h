// The oneDNN kernels of the backward ops (and the widened kernels in slices)
// against the reference kernels: every output within the dtype's tolerance.
//
// Error = max |onednn - reference| / max |reference| per output. Tolerances:
//   fp32 1e-5: the reference sums in double, oneDNN in fp32 in another
//     order; with |values| < 1 and a few hundred terms per sum (dW sums over
//     N*H*W, BN over N*H*W) the fp32 rounding stays at a few 1e-7 of the scale.
//   bf16 2e-2: both read the same bf16 inputs and round to bf16 (relative step
//     2^-8 = 3.9e-3), but oneDNN accumulates and rounds intermediate results
//     (the bf16 dW/dB of a long sum) in its own order; a few bf16 steps.
//   fp16 4e-3: the same with 11 significant bits (step 4.9e-4); widened
//     kernels round once at the end, the reference per output element.
#pragma once

#include <string>
#include <vector>

#include "tests/kernels/grad_test_util.h"

namespace amptrain::kernels::gradtest {

inline double OneDnnTolerance(ir::DType t) {
  return t == ir::DType::kFloat32 ? 1e-5 : t == ir::DType::kFloat16 ? 4e-3 : 2e-2;
}

// Runs `op` with the kernel `impl` (which must accept it) and the reference;
// expects every output within OneDnnTolerance of the first input's dtype.
inline void ExpectMatchesReference(const std::string& what, OpKind op, const ir::Attributes& a,
                                   const std::vector<ir::Tensor>& in, size_t outputs, std::vector<bool> unused = {},
                                   const char* impl = "onednn", uint32_t channels_last_inputs = 0,
                                   uint32_t channels_last_outputs = 0) {
  Options dnn, ref;
  dnn.impl = impl;
  dnn.channels_last_inputs = channels_last_inputs;
  dnn.channels_last_outputs = channels_last_outputs;
  dnn.num_outputs = ref.num_outputs = outputs;
  dnn.unused = ref.unused = std::move(unused);
  auto got = RunKernel(op, a, in, dnn);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
  auto want = RunKernel(op, a, in, ref);
  ASSERT_TRUE(want.ok()) << what << ": " << want.status().ToString();
  for (size_t o = 0; o < outputs; ++o)
    EXPECT_LT(NormalizedError((*got)[o], (*want)[o]), OneDnnTolerance(in[0].dtype()))
        << what << " output " << o << " " << ir::DTypeName(in[0].dtype());
}

}  // namespace amptrain::kernels::gradtest
