#!/usr/bin/env bash
# ResNet-50 inference on the CPU, amptrain against ONNX Runtime in the same run.
#   bash tools/bench/resnet50_inference.sh [THREADS]   (default 2)
#   AMP=build-perf/tools/amptrain bash tools/bench/resnet50_inference.sh 2   (another build)
# Writes a markdown table to docs/benchmarks/resnet50_inference.md: fp32 at
# batch 1 and 32 for amptrain (OpenMP default and OMP_WAIT_POLICY=passive)
# and ONNX Runtime, plus amptrain bf16 (`amptrain convert --amp O2 --dtype bf16
# --opset 22`: ONNX allows bf16 Conv and pooling from opset 22 only, so at the
# model's own opset 17 every Conv would stay fp32) when the conversion succeeds, and amptrain fp32 with `--no-winograd` (direct
# convolutions only). GFLOP/s counts 8.2 GFLOP (4.1 GMACs) per image.
# OUTMD=docs/benchmarks/resnet50_inference_<machine>.md to keep another machine's.
set -euo pipefail
cd "$(dirname "$0")/../.."
THREADS=${1:-2}
AMP=${AMP:-./build/tools/amptrain}
WORK=${WORK:-build/bench}
mkdir -p "$WORK" docs/benchmarks
$AMP models write resnet --depth 50 --eval -o "$WORK/resnet50.onnx" >/dev/null
BF16=""
if $AMP convert --amp O2 --dtype bf16 --opset 22 "$WORK/resnet50.onnx" -o "$WORK/resnet50.bf16.onnx" >/dev/null 2>&1; then
  BF16="$WORK/resnet50.bf16.onnx"
fi
OUTMD=${OUTMD:-docs/benchmarks/resnet50_inference.md}
{
  echo "# ResNet-50 inference, CPU"
  echo
  echo "Date: $(date -u +%Y-%m-%d). Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $THREADS threads."
  echo "Command: \`bash tools/bench/resnet50_inference.sh $THREADS\` (224x224, torchvision layout, random weights and inputs)."
  echo "Each figure is the median of the timed runs after warm-up; min/max give the spread. Runs of one batch size"
  echo "follow each other within a minute. \"passive\" runs amptrain with OMP_WAIT_POLICY=passive (OpenMP threads"
  echo "sleep instead of spinning at barriers), which matters when other processes share the cores."
  GHZ=$(lscpu | sed -n 's/^BogoMIPS: *//p' | awk '{printf "%.2f", $1 / 2000}')
  echo "Peak estimate: $(nproc) cores x 2 FMA units x 16 fp32 lanes x 2 flops x ${GHZ} GHz (BogoMIPS/2, the TSC clock;"
  echo "turbo not reported under KVM) = $(awk -v g="$GHZ" -v c="$(nproc)" 'BEGIN {printf "%.0f", c * 2 * 16 * 2 * g}') GFLOP/s fp32;"
  echo "measured (\`amptrain bench --fma-peak --threads $THREADS\`): $($AMP bench --fma-peak --threads "$THREADS" 2>&1 | sed -n 's/.*peak: \([0-9.]*\) GFLOP.*/\1/p') GFLOP/s."
  echo "bf16 rows: the model converted by \`amptrain convert --amp O2 --dtype bf16 --opset 22\` (at the model's"
  echo "opset 17 ONNX has no bf16 Conv, so every Conv would stay fp32); oneDNN's ISA here: $($AMP --version | sed -n 's/^onednn isa: //p')."
  echo
  echo "| batch | runtime | dtype | median ms | min ms | max ms | images/s | GFLOP/s | / ORT time |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$OUTMD"
row() {  # BATCH LABEL DTYPE JSON [ORT_JSON]
  python3 - "$@" >> "$OUTMD" <<'PY'
import json, sys
b, label, dtype, r = int(sys.argv[1]), sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
o = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
m = r["median_ms"]
print(f"| {b} | {label} | {dtype} | {m:.1f} | {r['min_ms']:.1f} | {r['max_ms']:.1f} | {1000*b/m:.1f} | "
      f"{8.2*b/(m/1000):.0f} | " + (f"{m/o['median_ms']:.2f}" if o else "1.00") + " |")
PY
}
for B in 1 32; do
  R=$([ "$B" = 1 ] && echo 20 || echo 5)
  ARGS=(--batch "$B" --threads "$THREADS" --warmup 2 --repeat "$R" --json)
  O=$(.venv/bin/python tools/bench/ort_bench.py "$WORK/resnet50.onnx" --batch "$B" --threads "$THREADS" --warmup 2 --repeat "$R")
  A=$($AMP bench "$WORK/resnet50.onnx" "${ARGS[@]}")
  P=$(OMP_WAIT_POLICY=passive $AMP bench "$WORK/resnet50.onnx" "${ARGS[@]}")
  row "$B" "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["runtime"])' "$O")" fp32 "$O"
  row "$B" "amptrain" fp32 "$A" "$O"
  row "$B" "amptrain, passive" fp32 "$P" "$O"
  row "$B" "amptrain, passive, --no-winograd" fp32 "$(OMP_WAIT_POLICY=passive $AMP bench "$WORK/resnet50.onnx" "${ARGS[@]}" --no-winograd)" "$O"
  if [ -n "$BF16" ]; then
    row "$B" "amptrain, passive" bf16 "$(OMP_WAIT_POLICY=passive $AMP bench "$BF16" "${ARGS[@]}")" "$O"
  fi
done
cat "$OUTMD"
