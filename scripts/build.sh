#!/usr/bin/env bash
# Configures and builds amptrain (Release, ccache) into ${BUILD_DIR:-build}.
#   AMPTRAIN_CUDA=AUTO|ON|OFF (default AUTO: the CUDA backend, nvcc for sm_90
#   plus compute_90 PTX, where /usr/local/cuda/bin/nvcc exists, as on the dev
#   and CI machines, which have the toolkit but no GPU: the CUDA tests then
#   skip; a machine without the toolkit builds the CPU backend alone).
#   TARGETS="a b": build only those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout (and not on the build folder's own path, which
# debug builds would hash), so a fresh clone elsewhere, as CI's, reuses what this machine built.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
BUILD_DIR=${BUILD_DIR:-build}
CUDA=${AMPTRAIN_CUDA:-AUTO}
if [ "$CUDA" = AUTO ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then CUDA=ON; else CUDA=OFF; fi
fi
# CMake finds nvcc through CUDACXX or PATH; the toolkit's own folder is not on PATH by default.
if [ "$CUDA" = ON ] && [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DAMPTRAIN_CUDA="$CUDA" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" ${TARGETS:+--target $TARGETS}
