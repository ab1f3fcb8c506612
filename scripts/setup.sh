#!/usr/bin/env bash
# Installs what amptrain needs on Debian bookworm (idempotent; skips what is there).
#   apt: the build (compiler, CMake, ccache; ONNX protobuf classes, oneDNN and
#        the OpenCL headers its CMake config requires, spdlog, fmt, CLI11,
#        nlohmann-json, yaml-cpp, RE2, zlib, libjpeg-turbo and libpng (image
#        folders), GoogleTest; clang, its runtime
#        libraries and llvm-symbolizer for the fuzz targets), Fashion-MNIST, and the
#        oracles Debian packages (CPU PyTorch 1.13, torchvision, PIL, numpy) plus
#        python3-venv.
#   .venv: the project's Python, made from Debian's /usr/bin/python3 with
#        --system-site-packages (so it sees Debian's torch and numpy), with
#        PyPI's onnx, onnxruntime, onnxconverter-common, safetensors and
#        tensorboard (the reader of our event files). Tests,
#        the main job and the benchmark scripts use .venv/bin/python; nothing is
#        pip-installed into the system Python (PEP 668).
#   .cache/onnx-1.16: a second venv with onnx 1.16, the generator of the ONNX
#        backend node tests of opset 21 / IR 10.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(build-essential cmake ccache pkg-config git ca-certificates
  libonnx-dev libprotobuf-dev protobuf-compiler libspdlog-dev libfmt-dev libcli11-dev
  nlohmann-json3-dev zlib1g-dev libjpeg62-turbo-dev libpng-dev libyaml-cpp-dev libre2-dev libdnnl-dev ocl-icd-opencl-dev
  libgtest-dev libbenchmark-dev clang libclang-rt-14-dev llvm-14 dataset-fashion-mnist
  python3 python3-venv python3-torch python3-torchvision python3-pil python3-numpy)
# numpy stays Debian's 1.24 (Debian's torch is built against numpy 1.x).
PIP_PACKAGES=(onnx onnxruntime onnxconverter-common safetensors tensorboard "numpy<2")
PIP_IMPORTS="onnx, onnxruntime, onnxconverter_common, safetensors.numpy, tensorboard, numpy, torch, torchvision"

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: apt installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's interpreter, whatever python3 is first on PATH (pyenv, conda...).
SYS_PY=/usr/bin/python3
VENV=.venv
if ! "$VENV/bin/python" -c "import $PIP_IMPORTS" 2>/dev/null; then
  echo "setup: making $VENV (pip: ${PIP_PACKAGES[*]})"
  [ -x "$VENV/bin/python" ] || "$SYS_PY" -m venv --system-site-packages "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"
  "$VENV/bin/python" -c "import $PIP_IMPORTS"
fi

# The ONNX backend node tests are generated with onnx 1.16 (opset 21, IR 10: the
# range amptrain supports), in a venv of its own so .venv keeps the current onnx.
VENV16=.cache/onnx-1.16
if ! "$VENV16/bin/python" -c "import onnx, numpy; assert onnx.__version__.startswith('1.16')" 2>/dev/null; then
  echo "setup: making $VENV16 for the ONNX backend test generators"
  rm -rf "$VENV16"
  mkdir -p .cache
  "$SYS_PY" -m venv "$VENV16"
  "$VENV16/bin/pip" install -q --disable-pip-version-check "onnx==1.16.2" "numpy<2"
fi
echo "setup: ok"
