#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, ASan and UBSan into
# ${BUILD_DIR:-build-fuzz} (only the IR, importer and AMP libraries and the
# reader sources the targets compile in; ccache keeps rebuilds cheap) and runs
# each for SECONDS (default 60) on its seed corpus, one after the other, one
# process each. Fails on the first
# finding: a crash, a sanitizer report, a timeout (-timeout, 10 s per input),
# an allocation or RSS over 2 GiB, a leak.
#   bash scripts/fuzz.sh [SECONDS [TARGET...]]
# The inputs of past findings (tests/fuzz/regressions/<target>/) run first.
# New inputs go to a scratch folder, not into tests/fuzz/corpus (FUZZ_CORPUS_DIR:
# keep them in FUZZ_CORPUS_DIR/<target> instead, so that long runs split
# over several sessions go on from where they stopped); the input of a
# finding is written to $BUILD_DIR/findings/<target>-crash-<sha1> (reproduce:
# $BUILD_DIR/tests/fuzz/<target> FILE). FUZZ_JOBS: build parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout (and not on the build folder's own path, which
# debug builds would hash), so a fresh clone elsewhere, as CI's, reuses what this machine built.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
SECS=${1:-60}
shift || true
ALL=(fuzz_onnx_model fuzz_policy fuzz_npy fuzz_safetensors fuzz_checkpoint fuzz_external_data fuzz_data fuzz_image fuzz_csv)
TARGETS=("${ALL[@]}")
(($#)) && TARGETS=("$@")
BUILD_DIR=${BUILD_DIR:-build-fuzz}

# FUZZ_NO_BUILD=1: use the targets already built (several runs side by side).
if [ -z "${FUZZ_NO_BUILD:-}" ]; then
  cmake -S . -B "$BUILD_DIR" -DAMPTRAIN_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DAMPTRAIN_CUDA=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
  cmake --build "$BUILD_DIR" -j "${FUZZ_JOBS:-$(nproc)}" --target "${TARGETS[@]}"
fi

mkdir -p "$BUILD_DIR/findings"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
LIMITS=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048)
for t in "${TARGETS[@]}"; do
  bin="$BUILD_DIR/tests/fuzz/$t"
  # The inputs of past findings first (tests/fuzz/regressions/<target>/), each once.
  regressions=(tests/fuzz/regressions/"$t"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "== $t: ${#regressions[@]} past findings"
    "$bin" "${LIMITS[@]}" "${regressions[@]}" >"$BUILD_DIR/$t.regressions.log" 2>&1 ||
      { tail -n 60 "$BUILD_DIR/$t.regressions.log"; echo "fuzz: $t fails on a past finding" >&2; exit 1; }
  fi
  if [ -n "${FUZZ_CORPUS_DIR:-}" ]; then
    scratch=$FUZZ_CORPUS_DIR/$t
    mkdir -p "$scratch"
  else
    scratch=$(mktemp -d)
  fi
  echo "== fuzz $t for ${SECS}s (seeds: tests/fuzz/corpus/$t)"
  status=0
  "$bin" "$scratch" "tests/fuzz/corpus/$t" "${LIMITS[@]}" -max_total_time="$SECS" -print_final_stats=1 \
    -artifact_prefix="$BUILD_DIR/findings/$t-" 2>"$BUILD_DIR/$t.log" || status=$?
  grep -E '^#[0-9]+ +DONE|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$BUILD_DIR/$t.log" || true
  [ -n "${FUZZ_CORPUS_DIR:-}" ] || rm -rf "$scratch"
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$BUILD_DIR/$t.log"
    echo "fuzz: $t found a problem (exit $status); log $BUILD_DIR/$t.log, input in $BUILD_DIR/findings/" >&2
    exit 1
  fi
done
echo "fuzz: ok (${TARGETS[*]}, ${SECS}s each)"
