#include "tests/alloc/alloc_counter.h"

#include <atomic>
#include <cerrno>
#include <cstring>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {

std::atomic<int> active{0};
std::atomic<int64_t> calls{0}, bytes{0}, largest{0};

inline void Note(size_t n) {
  if (active.load(std::memory_order_relaxed) > 0) {
    calls.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
    int64_t seen = largest.load(std::memory_order_relaxed);
    while (static_cast<int64_t>(n) > seen && !largest.compare_exchange_weak(seen, static_cast<int64_t>(n))) {
    }
  }
}

}  // namespace

extern "C" {

void* malloc(size_t n) {
  Note(n);
  return __libc_malloc(n);
}
void* calloc(size_t k, size_t n) {
  Note(k * n);
  return __libc_calloc(k, n);
}
void* realloc(void* p, size_t n) {
  Note(n);
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  Note(n);
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  Note(n);
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  if (a < sizeof(void*) || (a & (a - 1)) != 0) return EINVAL;
  Note(n);
  void* p = __libc_memalign(a, n);
  if (!p && n) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"

namespace amptrain::testing {

Counting::Counting() {
  start_ = {calls.load(), bytes.load(), 0};
  largest.store(0);
  active.fetch_add(1);
}

Counting::~Counting() { active.fetch_sub(1); }

AllocationCount Counting::count() const {
  return {calls.load() - start_.calls, bytes.load() - start_.bytes, largest.load()};
}

}  // namespace amptrain::testing
