// Buffers for a session's graph outputs, reused from run to run. A tensor
// that Run returns owns its buffer until the caller drops its last copy;
// the buffer then goes back here, and the next run's output of that size
// takes it, instead of going back to the allocator, whose fresh pages fault
// and are zeroed again on every run (in training, on every step, for every
// gradient). The contents are stale, as in the arena: kernels write every
// element of their outputs.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor {

class OutputPool {
 public:
  OutputPool();
  ~OutputPool();
  OutputPool(const OutputPool&) = delete;
  OutputPool& operator=(const OutputPool&) = delete;

  // A tensor of `dtype` and `dims` over an idle buffer of its size, or a new one.
  StatusOr<ir::Tensor> Take(ir::DType dtype, std::vector<int64_t> dims);
  // Frees the idle buffers; tensors still held keep theirs (freed when they
  // come back after the pool is gone, pooled again otherwise).
  void Release();
  size_t idle_bytes() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace amptrain::executor
