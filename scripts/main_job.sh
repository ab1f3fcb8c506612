#!/usr/bin/env bash
# The main job, no flags to learn. Installs what is missing, builds, then on
# real data (Fashion-MNIST from Debian's dataset-fashion-mnist), on the CPU:
#   1. writes SimpleCNN as ONNX (C++ builder, no Python),
#   2. trains it 5 epochs (Adam 1e-3, batch 128) in mixed precision (AMP O2:
#      bf16 where the CPU computes it natively, else fp16 with dynamic loss
#      scaling; fp32 master weights) with progress, evaluation, TensorBoard
#      events and checkpoints (resumable: run again and it continues),
#   3. exports the trained model as fp32 ONNX and in mixed precision, and
#      checks both on the test set (ONNX Runtime; amptrain for bf16, which
#      ONNX Runtime's CPU provider cannot run),
#   4. converts the fp32 model to the other low type with a report of what
#      runs in which precision and why, and evaluates it.
# Everything lands in out/ (OUT=dir to change; EPOCHS=N to shorten).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
TARGETS=amptrain bash scripts/build.sh
OUT=${OUT:-out}
EPOCHS=${EPOCHS:-5}
mkdir -p "$OUT"
AMP=./build/tools/amptrain
# OpenMP threads sleep instead of spinning at barriers: 2-10x faster when
# anything else shares the cores. They first spin briefly (GOMP_SPINCOUNT
# rounds), which catches the next kernel's parallel region without a futex
# wake-up: ResNet-18 training at 3x64x64 batch 32 took 210-237 ms a step with
# 30000 against 288-342 ms with none, on an Intel Xeon with 2 cores.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-30000}

echo "== 1. SimpleCNN (1x28x28 -> 10) as ONNX"
[ -f "$OUT/simplecnn.onnx" ] || $AMP models write simplecnn -o "$OUT/simplecnn.onnx"
$AMP inspect "$OUT/simplecnn.onnx"

# AMP O2 with fp32 master weights. bf16 where this CPU computes it natively
# and faster than fp32 (AMX, or AVX512_BF16 that measures faster than fp32
# FMA); elsewhere fp16 (three more mantissa bits, runs in ONNX Runtime) with
# dynamic loss scaling, stored in 2 bytes and computed in fp32.
if $AMP --version | grep -q '^bf16: native'; then
  DTYPE=bf16; OTHER=fp16; WHY="this CPU computes bf16 natively"
else
  DTYPE=fp16; OTHER=bf16; WHY="bf16 is not faster than fp32 on this CPU (no AMX-BF16, and no AVX512_BF16 that beats fp32 FMA), so fp16 with dynamic loss scaling"
fi
echo "== 2. train on Fashion-MNIST: AMP O2 $DTYPE ($WHY)"
$AMP --version | sed -n '2,$p'
$AMP train "$OUT/simplecnn.onnx" --data fashion-mnist --epochs "$EPOCHS" --amp O2 --dtype "$DTYPE" \
  --checkpoint-dir "$OUT/checkpoints-O2-$DTYPE" --resume auto --metrics "$OUT/metrics.jsonl" \
  --tensorboard "$OUT/tensorboard" \
  --export "$OUT/simplecnn.trained.onnx" --export-inference --export-amp "$OUT/simplecnn.trained.$DTYPE.onnx"

echo "== 3. the exported fp32 and $DTYPE models"
.venv/bin/python tools/bench/ort_eval.py "$OUT/simplecnn.trained.onnx"
if [ "$DTYPE" = fp16 ]; then
  .venv/bin/python tools/bench/ort_eval.py "$OUT/simplecnn.trained.fp16.onnx"
else  # ONNX Runtime's CPU provider has no bf16 kernels
  $AMP eval "$OUT/simplecnn.trained.bf16.onnx" --data fashion-mnist
fi

echo "== 4. the fp32 model converted to $OTHER (AMP O2), with a report of what runs in which precision and why"
$AMP convert "$OUT/simplecnn.trained.onnx" -o "$OUT/simplecnn.$OTHER.onnx" --amp O2 --dtype "$OTHER" \
  --report "$OUT/amp_${OTHER}_report.json"
$AMP eval "$OUT/simplecnn.$OTHER.onnx" --data fashion-mnist
echo "main job done: models, checkpoints, metrics, TensorBoard events and the AMP report in $OUT/"
