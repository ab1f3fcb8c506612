#include "executor/output_pool.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

namespace amptrain::executor {

// Idle buffers by size. Each buffer's deleter holds the state, so a buffer
// that comes back after the pool is destroyed still finds it (and is freed).
struct OutputPool::State {
  mutable std::mutex mu;
  std::map<size_t, std::vector<std::byte*>> idle;
  size_t idle_bytes = 0;
  bool closed = false;  // the pool is gone (its idle buffers freed): returning buffers are freed
};

OutputPool::OutputPool() : state_(std::make_shared<State>()) {}

OutputPool::~OutputPool() {
  Release();
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->closed = true;
}

StatusOr<ir::Tensor> OutputPool::Take(ir::DType dtype, std::vector<int64_t> dims) {
  AMP_ASSIGN_OR_RETURN(const size_t nbytes, ir::Tensor::NBytes(dtype, dims));
  const size_t bytes = std::max<size_t>((nbytes + 63) / 64 * 64, 64);
  std::byte* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->idle.find(bytes);
    if (it != state_->idle.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      state_->idle_bytes -= bytes;
    }
  }
  if (!p) p = static_cast<std::byte*>(std::aligned_alloc(64, bytes));
  if (!p) return Status(StatusCode::kOutOfRange, StrCat("out of memory allocating ", bytes, " bytes"));
  std::shared_ptr<std::byte> buffer(p, [state = state_, bytes](std::byte* q) {
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->closed) {
      std::free(q);
      return;
    }
    state->idle[bytes].push_back(q);
    state->idle_bytes += bytes;
  });
  return ir::Tensor::OverBuffer(dtype, std::move(dims), std::move(buffer));
}

void OutputPool::Release() {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (auto& [bytes, list] : state_->idle)
    for (std::byte* q : list) std::free(q);
  state_->idle.clear();
  state_->idle_bytes = 0;
}

size_t OutputPool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->idle_bytes;
}

}  // namespace amptrain::executor
