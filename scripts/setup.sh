#!/usr/bin/env bash
# Installs what amptrain needs on Debian bookworm (idempotent; skips what is there).
#   apt: compilers' libraries (ONNX protobuf classes, oneDNN, spdlog, fmt, CLI11,
#        nlohmann-json, GoogleTest), Fashion-MNIST, ccache, Debian's CPU PyTorch
#        (for /usr/bin/python3: the exporter of the reference models).
#   pip: onnx, onnxruntime, onnxconverter-common, numpy (oracles used by tests).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(build-essential cmake ccache pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler libspdlog-dev libfmt-dev libcli11-dev
  nlohmann-json3-dev zlib1g-dev libyaml-cpp-dev libdnnl-dev libgtest-dev libbenchmark-dev dataset-fashion-mnist
  python3-torch python3-torchvision python3-numpy)
PIP_PACKAGES=(onnx onnxruntime onnxconverter-common numpy)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if ! "$PY" -c "import onnx, onnxruntime, onnxconverter_common, numpy" 2>/dev/null; then
  echo "setup: pip installing ${PIP_PACKAGES[*]} for $PY"
  "$PY" -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}" 2>&1 | grep -v "Running pip as the 'root' user" || true
  "$PY" -c "import onnx, onnxruntime, onnxconverter_common, numpy"
fi
# The ONNX backend node tests are generated with onnx 1.16 (opset 21, IR 10: the
# range amptrain supports); it lives in its own venv so the main python keeps
# the current onnx.
VENV=.cache/onnx-1.16
if ! "$VENV/bin/python" -c "import onnx, numpy; assert onnx.__version__.startswith('1.16')" 2>/dev/null; then
  echo "setup: creating $VENV for the ONNX backend test generators"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "onnx==1.16.2" "numpy<2"
fi
echo "setup: ok"
