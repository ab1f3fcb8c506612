#!/usr/bin/env bash
# The main job, no flags to learn. Installs what is missing, builds, then
# (until `amptrain train` lands, issue 3) does the most complete job amptrain
# can do today on real data:
#   1. writes SimpleCNN for Fashion-MNIST as ONNX (C++ builder, no Python),
#   2. inspects it,
#   3. runs it on the first 256 Fashion-MNIST test images (Debian's dataset-fashion-mnist),
#   4. exports it back to ONNX and checks that ONNX Runtime gives the same logits.
# Everything lands in out/ (OUT=dir to change).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
TARGETS=amptrain bash scripts/build.sh
OUT=${OUT:-out}
mkdir -p "$OUT"
AMP=./build/tools/amptrain

echo "== 1. SimpleCNN (1x28x28 -> 10) as ONNX"
$AMP models write simplecnn --eval -o "$OUT/simplecnn.onnx"
echo "== 2. inspect"
$AMP inspect "$OUT/simplecnn.onnx"
echo "== 3. inference on 256 Fashion-MNIST test images"
python3 - "$OUT/fmnist_test256.npy" <<'PY'
import gzip, sys, numpy as np
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    raw = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:256]
np.save(sys.argv[1], ((raw.astype(np.float32) / 255.0) - 0.2860) / 0.3530)
PY
$AMP run "$OUT/simplecnn.onnx" --input "input_0=$OUT/fmnist_test256.npy" --output-dir "$OUT/logits"
echo "== 4. export and check with ONNX Runtime"
$AMP export "$OUT/simplecnn.onnx" -o "$OUT/simplecnn.exported.onnx"
python3 tests/tools/ort_run.py "$OUT/simplecnn.exported.onnx" --check --input "input_0=$OUT/fmnist_test256.npy" --output-dir "$OUT/logits_ort"
python3 tests/tools/compare_npy.py "$OUT/logits" "$OUT/logits_ort" --rel-l2 1e-5
echo "main job done: outputs in $OUT/"
