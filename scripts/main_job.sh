#!/usr/bin/env bash
# The main job, no flags to learn. Installs what is missing, builds, then on
# real data (Fashion-MNIST from Debian's dataset-fashion-mnist), on the CPU:
#   1. writes SimpleCNN as ONNX (C++ builder, no Python),
#   2. trains it 5 epochs (Adam 1e-3, batch 128) with progress, evaluation and
#      checkpoints (resumable: run again and it continues from the last one),
#   3. exports the trained model as ONNX and checks its test accuracy in
#      ONNX Runtime,
#   4. converts it to mixed precision (AMP O2, fp16 and bf16) with a report of
#      what runs in which precision and why, and checks the fp16 model in
#      ONNX Runtime.
# Everything lands in out/ (OUT=dir to change; EPOCHS=N to shorten).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
TARGETS=amptrain bash scripts/build.sh
OUT=${OUT:-out}
EPOCHS=${EPOCHS:-5}
mkdir -p "$OUT"
AMP=./build/tools/amptrain
# OpenMP threads sleep instead of spinning at barriers: as fast on an idle
# machine here, and 2-10x faster when anything else shares the cores.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

echo "== 1. SimpleCNN (1x28x28 -> 10) as ONNX"
[ -f "$OUT/simplecnn.onnx" ] || $AMP models write simplecnn -o "$OUT/simplecnn.onnx"
$AMP inspect "$OUT/simplecnn.onnx"

echo "== 2. train on Fashion-MNIST"
$AMP train "$OUT/simplecnn.onnx" --data fashion-mnist --epochs "$EPOCHS" \
  --checkpoint-dir "$OUT/checkpoints" --resume auto --metrics "$OUT/metrics.jsonl" \
  --export "$OUT/simplecnn.trained.onnx" --export-inference

echo "== 3. the exported model in ONNX Runtime"
.venv/bin/python tools/bench/ort_eval.py "$OUT/simplecnn.trained.onnx"

echo "== 4. mixed precision"
$AMP convert "$OUT/simplecnn.trained.onnx" -o "$OUT/simplecnn.fp16.onnx" --amp O2 --dtype fp16 --report "$OUT/amp_fp16_report.json"
$AMP convert "$OUT/simplecnn.trained.onnx" -o "$OUT/simplecnn.bf16.onnx" --amp O2 --dtype bf16 --report "$OUT/amp_bf16_report.json"
.venv/bin/python tools/bench/ort_eval.py "$OUT/simplecnn.fp16.onnx"
echo "main job done: models, checkpoints, metrics and AMP reports in $OUT/"
