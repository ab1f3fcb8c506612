#!/usr/bin/env bash
# Configures and builds amptrain (Release, ccache) into ${BUILD_DIR:-build}.
#   AMPTRAIN_CUDA=ON|OFF (default OFF here: CI and the dev machines have no GPU;
#   the CUDA backend is built by scripts/device_pack.sh).
#   TARGETS="a b": build only those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DAMPTRAIN_CUDA="${AMPTRAIN_CUDA:-OFF}" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" ${TARGETS:+--target $TARGETS}
