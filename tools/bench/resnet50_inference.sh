#!/usr/bin/env bash
# ResNet-50 inference on the CPU, amptrain against ONNX Runtime in the same run.
#   bash tools/bench/resnet50_inference.sh [THREADS]   (default 2)
# Writes a markdown table to docs/benchmarks/resnet50_inference.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
THREADS=${1:-2}
AMP=./build/tools/amptrain
WORK=${WORK:-build/bench}
mkdir -p "$WORK" docs/benchmarks
$AMP models write resnet --depth 50 --eval -o "$WORK/resnet50.onnx" >/dev/null
OUTMD=docs/benchmarks/resnet50_inference.md
{
  echo "# ResNet-50 inference, CPU"
  echo
  echo "Date: $(date -u +%Y-%m-%d). Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $THREADS threads."
  echo "Command: \`bash tools/bench/resnet50_inference.sh $THREADS\` (fp32, 224x224, torchvision layout, random weights and inputs)."
  echo "Each figure is the median of the timed runs after warm-up; min/max give the spread."
  echo
  echo "| batch | runtime | median ms | min ms | max ms | images/s | amptrain / ORT time |"
  echo "|---|---|---|---|---|---|---|"
} > "$OUTMD"
for B in 1 32; do
  R=$([ "$B" = 1 ] && echo 20 || echo 5)
  A=$($AMP bench "$WORK/resnet50.onnx" --batch "$B" --threads "$THREADS" --warmup 2 --repeat "$R" --json)
  O=$(python3 tools/bench/ort_bench.py "$WORK/resnet50.onnx" --batch "$B" --threads "$THREADS" --warmup 2 --repeat "$R")
  python3 - "$B" "$A" "$O" >> "$OUTMD" <<'PY'
import json, sys
b = int(sys.argv[1]); a = json.loads(sys.argv[2]); o = json.loads(sys.argv[3])
for r in (a, o):
    print(f"| {b} | {r['runtime']} | {r['median_ms']:.1f} | {r['min_ms']:.1f} | {r['max_ms']:.1f} | {1000*b/r['median_ms']:.1f} | "
          + (f"{a['median_ms']/o['median_ms']:.2f}" if r is a else "") + " |")
PY
done
cat "$OUTMD"
