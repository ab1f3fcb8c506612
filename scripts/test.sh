#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the whole suite
# (unit, ONNX backend node tests, PyTorch/ONNX Runtime interop, CLI), then the
# importer (malformed models) and executor suites again under
# AddressSanitizer, then each libFuzzer
# target for FUZZ_SECONDS (default 60) on its seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# ctest runs test processes side by side on few cores: OpenMP threads that
# spin-wait for each other then starve (10-50x slower steps), so they sleep.
export OMP_WAIT_POLICY=passive
(cd build && ctest -j "$(nproc)" --output-on-failure --timeout 900)
# Every skip with its reason (the test's GTEST_SKIP message).
skips() {
  awk '/^[0-9]+\/[0-9]+ Test: / {name = $3} /: Skipped$/ {getline reason; print "  " name ": " reason}' \
    "$1/Testing/Temporary/LastTest.log" | sort -u
}
echo "== skipped tests and why"
skips build

# The whole suite again (the CUDA tests aside: they skip here) with oneDNN
# capped at AVX2, so the paths of a CPU without AVX-512 run on one that has it
# (older oneDNN spells it DNNL_); amptrain's own vector kernels follow oneDNN's
# effective ISA (kernels/cpu/cpu_info.h). No result may depend on the CPU but
# through a skip that names the instruction set.
echo "== the suite with ONEDNN_MAX_CPU_ISA=AVX2"
(cd build && ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 ctest -j "$(nproc)" -LE cuda --output-on-failure --timeout 900)
echo "== skipped with the ISA capped, and why"
skips build

# Sanitizer build of the untrusted-input tests (importer) and the npy reader.
BUILD_DIR=build-asan TARGETS="importer_tests executor_tests" \
  bash scripts/build.sh -DAMPTRAIN_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "== AddressSanitizer: importer and executor tests"
ASAN_OPTIONS=detect_leaks=0 ./build-asan/tests/importer_tests --gtest_brief=1
ASAN_OPTIONS=detect_leaks=0 ./build-asan/tests/executor_tests --gtest_brief=1

# libFuzzer targets of the untrusted-input readers (tests/fuzz, clang with ASan
# and UBSan); any finding fails the run.
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
