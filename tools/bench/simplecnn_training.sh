#!/usr/bin/env bash
# SimpleCNN training throughput on Fashion-MNIST, amptrain against PyTorch eager in the same run.
#   bash tools/bench/simplecnn_training.sh [THREADS]   (default 2)
#   AMP=build-perf/tools/amptrain STEPS=60 WINDOW=10 REPEATS=2 DEFAULT_POLICY=1 bash tools/bench/simplecnn_training.sh
# Same model (models/torch/export_models.py SimpleCNN; `amptrain models write simplecnn`), optimizer
# (Adam 1e-3), loss (cross-entropy), data (Fashion-MNIST, (x/255-0.2860)/0.3530) and batch sizes (32, 128).
# Each measurement trains WINDOW warm-up steps (amptrain: the first progress window, which also
# holds planning; PyTorch: untimed steps), then STEPS timed steps in windows of WINDOW steps; both
# time only the training step (batch assembly excluded). amptrain and PyTorch run back to back
# for each batch size, REPEATS times with OMP_WAIT_POLICY=passive, then (DEFAULT_POLICY=1) once
# with the OpenMP default. Writes docs/benchmarks/simplecnn_training.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
THREADS=${1:-2}
AMP=${AMP:-./build/tools/amptrain}
WORK=${WORK:-build/bench}
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
STEPS=${STEPS:-60}
WINDOW=${WINDOW:-10}
REPEATS=${REPEATS:-2}
DEFAULT_POLICY=${DEFAULT_POLICY:-1}
TORCH_PY=${TORCH_PY:-/usr/bin/python3}
mkdir -p "$WORK" docs/benchmarks
RESULTS="$WORK/simplecnn_training.jsonl"
: > "$RESULTS"
$AMP models write simplecnn -o "$WORK/simplecnn.onnx" >/dev/null

AMP_CMD="$AMP train $WORK/simplecnn.onnx --data fashion-mnist:$DATA --steps $((STEPS + WINDOW)) --batch-size B"
AMP_CMD+=" --threads $THREADS --metrics $WORK/m.jsonl --log-every $WINDOW"
TORCH_CMD="$TORCH_PY tools/bench/torch_train_bench.py --data $DATA --batch B --threads $THREADS"
TORCH_CMD+=" --warmup $WINDOW --steps $STEPS --window $WINDOW"

measure() {  # POLICY(passive|default) REPEAT BATCH
  local policy=$1 rep=$2 b=$3 env=()
  [ "$policy" = passive ] && env=(OMP_WAIT_POLICY=passive)
  env "${env[@]}" ${AMP_CMD//--batch-size B/--batch-size $b} >/dev/null 2>&1
  python3 - "$WORK/m.jsonl" "$policy" "$rep" "$b" >> "$RESULTS" <<'PY'
import json, statistics, sys
path, policy, rep, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
w = [r["images_per_s"] for r in map(json.loads, open(path)) if r["event"] == "progress"][1:]
print(json.dumps({"runtime": "amptrain", "policy": policy, "repeat": rep, "batch": b, "windows": w,
                  "median": statistics.median(w)}))
PY
  env "${env[@]}" ${TORCH_CMD//--batch B/--batch $b} |
    python3 -c 'import json,sys; r=json.load(sys.stdin); r.update(runtime="pytorch", policy=sys.argv[1], repeat=int(sys.argv[2])); print(json.dumps(r))' \
      "$policy" "$rep" >> "$RESULTS"
}

START=$(date +%s)
LOAD_START=$(cut -d" " -f1-3 /proc/loadavg)
for rep in $(seq 1 "$REPEATS"); do
  for B in 32 128; do measure passive "$rep" "$B"; done
done
if [ "$DEFAULT_POLICY" = 1 ]; then
  for B in 32 128; do measure default 1 "$B"; done
fi
WALL=$(( $(date +%s) - START ))
LOAD_END=$(cut -d" " -f1-3 /proc/loadavg)

OUTMD=docs/benchmarks/simplecnn_training.md
{
  echo "# SimpleCNN training throughput, CPU: amptrain vs PyTorch eager"
  echo
  HV=$(lscpu | sed -n 's/^Hypervisor vendor: *//p')
  echo "Date: $(date -u +%Y-%m-%d). Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores${HV:+ ($HV guest)},"
  echo "$THREADS threads."
  echo "PyTorch: $($TORCH_PY -c 'import torch; print(torch.__version__)') (Debian), eager mode. Total benchmark wall time: ${WALL} s."
  echo "Load average (1/5/15 min) at start: $LOAD_START; at end: $LOAD_END."
  echo
  echo "Command: \`bash tools/bench/simplecnn_training.sh $THREADS\` (STEPS=$STEPS WINDOW=$WINDOW REPEATS=$REPEATS"
  echo "DEFAULT_POLICY=$DEFAULT_POLICY), which runs for each batch size B in 32, 128:"
  echo
  echo '```'
  echo "$AMP models write simplecnn -o $WORK/simplecnn.onnx"
  echo "[OMP_WAIT_POLICY=passive] $AMP_CMD"
  echo "[OMP_WAIT_POLICY=passive] $TORCH_CMD"
  echo '```'
  echo
  echo "Same model (SimpleCNN of models/torch/export_models.py: Conv64-BN-ReLU-Pool, Conv128-BN-ReLU-Pool,"
  echo "Linear 6272-512, ReLU, Dropout 0.5, Linear 512-10; training mode), Adam lr 1e-3, cross-entropy, Fashion-MNIST"
  echo "train set normalized as (x/255-0.2860)/0.3530, shuffled. Both time only the training step (forward, backward,"
  echo "optimizer; batch assembly excluded): amptrain's progress windows (\`images_per_s\` of the --metrics JSON lines)"
  echo "after dropping the first window ($WINDOW steps: warm-up and planning); PyTorch the same window size after"
  echo "$WINDOW untimed warm-up steps. $STEPS timed steps = $((STEPS / WINDOW)) windows per measurement."
  echo "amptrain and PyTorch of one batch size run back to back; the passive pair is repeated $REPEATS times."
  echo
  echo "OMP_WAIT_POLICY=passive: this machine is shared (other builds and tests run on the same $(nproc) cores)."
  echo "With the default (active) policy, OpenMP worker threads spin at every barrier; when another process"
  echo "holds a core, a spinning thread burns its time slice while the thread it waits for is descheduled,"
  echo "and throughput collapses by large, erratic factors. Passive waits sleep instead, so figures stay"
  echo "comparable under load. Both runtimes use OpenMP here (amptrain via oneDNN, PyTorch via ATen), so both get"
  echo "the same setting. The \"default\" rows are one run without it, for reference."
  echo
  echo "images/s: median over all timed windows of the runs in the row; min-max is the spread of those windows;"
  echo "per-run medians follow in order. Ratio = amptrain median / PyTorch median, same batch and policy."
  echo
  echo "| batch | OMP_WAIT_POLICY | runtime | images/s (median) | min-max | per-run medians | amptrain / PyTorch |"
  echo "|---|---|---|---|---|---|---|"
  python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for policy in ("passive", "default"):
    for b in (32, 128):
        med = {}
        for rt in ("amptrain", "pytorch"):
            rs = [r for r in rows if r["policy"] == policy and r["batch"] == b and r["runtime"] == rt]
            if not rs:
                continue
            w = [x for r in rs for x in r["windows"]]
            med[rt] = statistics.median(w)
            ratio = f"{med['amptrain'] / med['pytorch']:.2f}" if rt == "pytorch" and "amptrain" in med else ""
            per_run = ", ".join(f"{r['median']:.0f}" for r in rs)
            print(f"| {b} | {policy} | {rt} | {med[rt]:.0f} | {min(w):.0f}-{max(w):.0f} | {per_run} | {ratio} |")
PY
  echo
  echo "Raw windows (images/s) are in $RESULTS after a run."
} > "$OUTMD"
cat "$OUTMD"
