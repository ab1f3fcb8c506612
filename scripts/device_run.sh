#!/usr/bin/env bash
# The device check's run on the GPU machine, packed by scripts/device_check.sh
# as run.sh at the top of its tarball:
#   tar xzf amptrain-device.tar.gz && bash amptrain-device/run.sh "$OUT"
# 1. libraries: the tarball's lib/ first, then the CUDA runtime, cuBLAS and
#    cuDNN from the Python nvidia-* wheels (site-packages/nvidia/*/lib), then
#    /usr/local/cuda/lib64 and the driver's /usr/local/nvidia/lib64;
# 2. the CUDA test suite: the Device tests, CUDA against CPU for every op
#    and gradient in fp32, fp16 and bf16, then training steps on the GPU
#    against the CPU's;
# 3. training benchmarks, batch 256, synthetic data: SimpleCNN and ResNet-50,
#    amptrain --device cuda at O0, O1/O2 fp16 and bf16, and PyTorch on the
#    same GPU (fp32, autocast fp16 + GradScaler, autocast bf16; channels_last),
#    and ResNet-50 O2 fp16 with --no-channels-last (NCHW), to measure NHWC against.
# Everything is written to OUT (default ./out): results.md (the table),
# cuda_vs_cpu.md (per op and dtype), and the logs. A step that fails is a row
# saying so; the run goes on. The whole run keeps to BUDGET_S (480) seconds.
# A rerun within the same lease can leave out what already ran: RUN_OPS=0
# skips the per-op CUDA-against-CPU suite, RUN_TORCH=0 the PyTorch rows.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-${OUT:-$PWD/out}}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUDGET_S=${BUDGET_S:-480}
RUN_OPS=${RUN_OPS:-1}
RUN_TORCH=${RUN_TORCH:-1}
PY=${PYTHON:-python3}
BIN=$HERE/bin

# ---- 1. libraries ----
wheel_lib_dirs() {
  local sp
  for sp in $("$PY" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null) \
            /opt/torch/.venv/lib/python3*/site-packages; do
    [ -d "$sp/nvidia" ] && find "$sp/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null
  done | sort -u | paste -sd: -
}
WHEELS=$(wheel_lib_dirs)
export LD_LIBRARY_PATH="$HERE/lib${WHEELS:+:$WHEELS}:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

RESULTS=$OUT/results.md
row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3" >>"$RESULTS"; }
# The first line of a log that says what went wrong, for a table cell.
why() { grep -m1 -iE 'error|fail|no cuda|not found|unimplemented|unknown' "$1" | tr '|' '/' | cut -c1-200; }
left() { echo $((BUDGET_S - SECONDS)); }

gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
{
  echo "# amptrain device check"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), host $(uname -n), GPU: ${gpu:-none visible (nvidia-smi: $(nvidia-smi -L 2>&1 | head -1))}"
  echo "build: $(cat "$HERE/MANIFEST" 2>/dev/null | paste -sd' ' -)"
  echo
  echo "| step | result | detail |"
  echo "| --- | --- | --- |"
} >"$RESULTS"

missing=$(ldd "$BIN/amptrain" "$BIN/cuda_tests" 2>&1 | grep 'not found' | awk '{print $1}' | sort -u | paste -sd' ' -)
cudnn=$(ldd "$BIN/amptrain" 2>/dev/null | awk '/libcudnn\.so|libcublas\.so/ {print $1 " -> " $3}' | paste -sd' ' -)
if [ -n "$missing" ]; then row "libraries" "FAIL" "not found: $missing"; else row "libraries" "ok" "$cudnn"; fi
"$BIN/amptrain" --version >"$OUT/version.log" 2>&1 && row "amptrain --version" "ok" "$(head -1 "$OUT/version.log")" ||
  row "amptrain --version" "FAIL" "$(why "$OUT/version.log")"

# ---- 2. the CUDA test suite ----
# gtest's summary lines as "P passed, F failed, S skipped".
summary() {
  local p f s
  p=$(grep -oE '^\[  PASSED  \] [0-9]+' "$1" | grep -oE '[0-9]+$' || true)
  f=$(grep -oE '^\[  FAILED  \] [0-9]+ test' "$1" | grep -oE '[0-9]+' || true)
  s=$(grep -oE '^\[  SKIPPED \] [0-9]+ test' "$1" | grep -oE '[0-9]+' || true)
  echo "${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
}
suite() {  # name filter
  local log=$OUT/$1.log
  timeout 300 "$BIN/cuda_tests" --gtest_filter="$2" --gtest_output="xml:$OUT/$1.xml" >"$log" 2>&1
  local rc=$?
  local detail
  detail="$(summary "$log")"
  local skip
  skip=$(grep -m1 '^no CUDA device' "$log" || true)
  [ -n "$skip" ] && detail="$detail; $skip"
  if [ $rc -eq 0 ]; then row "$1" "ok" "$detail"; else row "$1" "FAIL (exit $rc)" "$detail"; fi
}
suite cuda_device_tests 'CudaDevice*'
suite cuda_declines 'CudaDeclines.*:CudnnDeclines.*'
[ "$RUN_OPS" = 1 ] && suite cuda_vs_cpu 'Ops/CudaVsCpu.*'
# The Trainer on the GPU: placement of the training graphs, then a few
# SimpleCNN and ResNet-18 steps against the same steps on the CPU.
suite cuda_training 'Training/CudaPlacement.*:CudaStepKernels.*:CudaTraining.*'
# Per op and dtype: OK / FAILED / SKIPPED.
{
  echo "| test (op_dtype) | result |"
  echo "| --- | --- |"
  sed -nE 's/^\[ +(OK|FAILED|SKIPPED) +\] Ops\/CudaVsCpu\.MatchesReference\/([A-Za-z0-9_]+).*/| \2 | \1 |/p' \
    "$OUT/cuda_vs_cpu.log" 2>/dev/null | sort -u
} >"$OUT/cuda_vs_cpu.md"

# ---- 3. training benchmarks ----
SIMPLECNN=$OUT/simplecnn.onnx RESNET50=$OUT/resnet50.onnx
"$BIN/amptrain" models write simplecnn -o "$SIMPLECNN" >"$OUT/models.log" 2>&1
"$BIN/amptrain" models write resnet --depth 50 -o "$RESNET50" >>"$OUT/models.log" 2>&1
# Inference through the executor on the GPU (placement names every node
# without a CUDA kernel at once).
for m in simplecnn resnet50; do
  onnx=$SIMPLECNN
  [ $m = resnet50 ] && onnx=$RESNET50
  log=$OUT/infer_$m.log
  if timeout 120 "$BIN/amptrain" bench "$onnx" --batch 64 --device cuda --warmup 2 --repeat 10 --json >"$log" 2>&1; then
    row "amptrain $m inference" "ok" "$(tail -1 "$log")"
  else
    row "amptrain $m inference" "not yet" "$(why "$log")"
  fi
done
ours() {  # model-name onnx level dtype
  local name="amptrain $1 $3${4:+ $4}" log=$OUT/bench_$1_$3${4:+_$4}.log
  if [ "$(left)" -lt 60 ]; then row "$name" "skipped" "time budget"; return; fi
  if timeout 120 "$BIN/amptrain" bench "$2" --train --batch 256 --amp "$3" ${4:+--dtype $4} --device cuda \
      --optimizer sgd --warmup 3 --repeat 20 --json >"$log" 2>&1; then
    row "$name" "ok" "$(tail -1 "$log")"
  else
    row "$name" "not yet" "$(why "$log")"
  fi
}
torch_bench() {  # model precision
  local name="PyTorch $1 $2" log=$OUT/torch_$1_$2.log
  [ "$RUN_TORCH" = 1 ] || return 0
  if [ "$(left)" -lt 60 ]; then row "$name" "skipped" "time budget"; return; fi
  if timeout 150 "$PY" "$HERE/torch_gpu_train_bench.py" --model "$1" --batch 256 --precision "$2" >"$log" 2>&1; then
    row "$name" "ok" "$(tail -1 "$log")"
  else
    row "$name" "FAIL" "$(why "$log")"
  fi
}
for m in simplecnn resnet50; do
  onnx=$SIMPLECNN
  [ $m = resnet50 ] && onnx=$RESNET50
  ours $m "$onnx" O0 ""
  for dt in fp16 bf16; do
    ours $m "$onnx" O1 $dt
    ours $m "$onnx" O2 $dt
  done
  for prec in fp32 fp16 bf16; do torch_bench $m $prec; done
done
# Channels-last against NCHW on the GPU: the same O2 fp16 ResNet-50 step with
# every activation kept NCHW (bench --no-channels-last), measured in the same call.
log=$OUT/bench_resnet50_O2_fp16_nchw.log
if [ "$(left)" -ge 60 ]; then
  if timeout 120 "$BIN/amptrain" bench "$RESNET50" --train --batch 256 --amp O2 --dtype fp16 --device cuda \
      --optimizer sgd --warmup 3 --repeat 20 --no-channels-last --json >"$log" 2>&1; then
    row "amptrain resnet50 O2 fp16 NCHW (--no-channels-last)" "ok" "$(tail -1 "$log")"
  else
    row "amptrain resnet50 O2 fp16 NCHW (--no-channels-last)" "not yet" "$(why "$log")"
  fi
fi
# Where the time goes: per-op kernel times of one ResNet-50 AMP step.
if [ "$(left)" -ge 45 ]; then
  log=$OUT/profile_resnet50_O2_fp16.log
  if timeout 60 "$BIN/amptrain" bench "$RESNET50" --train --batch 256 --amp O2 --device cuda --warmup 2 --repeat 5 \
      --profile >"$log" 2>&1; then
    row "profile resnet50 O2 fp16" "ok" "per-op times in $(basename "$log")"
  else
    row "profile resnet50 O2 fp16" "FAIL" "$(why "$log")"
  fi
fi
# What cudnnFind measured per convolution and pass, and the choice (--verbose).
if [ "$(left)" -ge 40 ]; then
  log=$OUT/cudnn_find_resnet50_O2_fp16.log
  if timeout 60 "$BIN/amptrain" -v bench "$RESNET50" --train --batch 256 --amp O2 --device cuda --warmup 0 --repeat 1 \
      >"$log" 2>&1; then
    row "cudnn algorithms resnet50 O2 fp16" "ok" "$(grep -c 'cudnn ' "$log") choices in $(basename "$log")"
  else
    row "cudnn algorithms resnet50 O2 fp16" "FAIL" "$(why "$log")"
  fi
fi
echo >>"$RESULTS"
echo "run time: ${SECONDS}s of ${BUDGET_S}s" >>"$RESULTS"
cat "$RESULTS"
