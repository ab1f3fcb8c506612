// Counts the process's heap allocations (malloc, calloc, realloc, the
// aligned allocators, and operator new through them) while a Counting scope
// is open, by interposing glibc's allocator entry points in this test binary
// (shared libraries' calls, oneDNN's included, resolve to them too). Not
// built under a sanitizer, which interposes the same functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace amptrain::testing {

struct AllocationCount {
  int64_t calls = 0;
  int64_t bytes = 0;
  int64_t largest = 0;  // the largest single allocation
};

// Allocations made since this scope opened, by any thread (one scope at a time).
class Counting {
 public:
  Counting();
  ~Counting();
  AllocationCount count() const;

 private:
  AllocationCount start_;
};

}  // namespace amptrain::testing
