#!/usr/bin/env bash
# The AMP accuracy-parity runs of issue 8: SimpleCNN on Fashion-MNIST,
# 3 epochs (Adam 1e-3, batch 128), for O0, O1 bf16 and O2 fp16 with seeds
# 1-3, then O1 fp16, O2 bf16, O3 bf16 and O3 fp16 with seed 1. The seed
# sets both the initial weights (`models write --seed`) and the data order
# (`train --seed`).
#
#   bash tools/bench/amp_parity.sh [RUN_DIR]   (default /var/tmp/amptrain-parity)
#   LANES=N      runs side by side (default 2), each on THREADS threads (default 1)
#   EPOCHS=N     epochs per run (default 3)
#   SEEDS=N      seeds 1..N of O0, O1 bf16 and O2 fp16 (default 3; more narrow the
#                seed noise of the means: one seed moves the final accuracy by ~1 pp)
#   SCHEDULE=S   the learning-rate schedule (default constant; cosine decays to 0 over
#                the run, which steadies the final accuracy between seeds)
#
# Resumable across sessions: a finished run leaves RUN_DIR/NAME.jsonl and is
# not run again; an unfinished one resumes from its newest checkpoint
# (RUN_DIR/NAME.ckpt, every 100 steps; resume is bitwise, see the trainer's
# resume tests), appending to NAME.partial.jsonl and NAME.log. wall_s adds up
# the pieces that ended by themselves; a piece killed from outside is not
# counted. The binary is copied once
# into RUN_DIR (with the commit it was built from), so a rebuild of build/
# while the runs go on changes nothing. The table comes from
# tools/bench/amp_parity_table.py RUN_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN_DIR=${1:-/var/tmp/amptrain-parity}
LANES=${LANES:-2}
THREADS=${THREADS:-1}
EPOCHS=${EPOCHS:-3}
SEEDS=${SEEDS:-3}
SCHEDULE=${SCHEDULE:-constant}
mkdir -p "$RUN_DIR"
if [ ! -x "$RUN_DIR/amptrain" ]; then
  cp build/tools/amptrain "$RUN_DIR/amptrain"
  git rev-parse HEAD > "$RUN_DIR/commit"
  "$RUN_DIR/amptrain" --version > "$RUN_DIR/version"
fi
AMP=$RUN_DIR/amptrain
export OMP_WAIT_POLICY=passive

# name seed amp-flags...
RUNS=(
  "O0-s1 1"          "O1-bf16-s1 1 --amp O1 --dtype bf16"  "O2-fp16-s1 1 --amp O2 --dtype fp16"
  "O0-s2 2"          "O1-bf16-s2 2 --amp O1 --dtype bf16"  "O2-fp16-s2 2 --amp O2 --dtype fp16"
  "O0-s3 3"          "O1-bf16-s3 3 --amp O1 --dtype bf16"  "O2-fp16-s3 3 --amp O2 --dtype fp16"
  "O1-fp16-s1 1 --amp O1 --dtype fp16"  "O2-bf16-s1 1 --amp O2 --dtype bf16"
  "O3-bf16-s1 1 --amp O3 --dtype bf16"  "O3-fp16-s1 1 --amp O3 --dtype fp16"
)
for ((s = 4; s <= SEEDS; s++)); do
  RUNS+=("O0-s$s $s" "O1-bf16-s$s $s --amp O1 --dtype bf16" "O2-fp16-s$s $s --amp O2 --dtype fp16")
done

run_one() {  # name seed flags...
  local name=$1 seed=$2; shift 2
  [ -f "$RUN_DIR/$name.jsonl" ] && return 0
  local model=$RUN_DIR/simplecnn-seed$seed.onnx
  [ -f "$model" ] || "$AMP" models write simplecnn --seed "$seed" -o "$model" > /dev/null
  local ckpt=$RUN_DIR/$name.ckpt
  # A partial metrics file without checkpoints is from a run that cannot resume.
  [ -d "$ckpt" ] || { rm -f "$RUN_DIR/$name.partial.jsonl" "$RUN_DIR/$name.wall"; : > "$RUN_DIR/$name.log"; }
  local t0; t0=$(date +%s)
  local before; before=$(cat "$RUN_DIR/$name.wall" 2>/dev/null || echo 0)
  if "$AMP" train "$model" --data fashion-mnist --epochs "$EPOCHS" --seed "$seed" --threads "$THREADS" \
       --log-every 100 --metrics "$RUN_DIR/$name.partial.jsonl" --schedule "$SCHEDULE" \
       --checkpoint-dir "$ckpt" --checkpoint-every 100 --keep-last 2 --resume auto-or-fresh \
       "$@" >> "$RUN_DIR/$name.log" 2>&1; then
    local wall=$(( before + $(date +%s) - t0 ))
    echo "{\"event\": \"run\", \"name\": \"$name\", \"wall_s\": $wall, \"flags\": \"$* --schedule $SCHEDULE\"}" \
      >> "$RUN_DIR/$name.partial.jsonl"
    mv "$RUN_DIR/$name.partial.jsonl" "$RUN_DIR/$name.jsonl"
    rm -rf "$ckpt" "$RUN_DIR/$name.wall"
    echo "amp_parity: $name done in $wall s"
  else
    echo $(( before + $(date +%s) - t0 )) > "$RUN_DIR/$name.wall"
    echo "amp_parity: $name FAILED (see $RUN_DIR/$name.log)" >&2
  fi
}

lane() {  # lane index: runs i with i % LANES == index
  local i
  for i in "${!RUNS[@]}"; do
    [ $(( i % LANES )) -eq "$1" ] || continue
    # shellcheck disable=SC2086
    run_one ${RUNS[$i]}
  done
}

for l in $(seq 0 $(( LANES - 1 ))); do lane "$l" & done
wait
echo "amp_parity: all runs in $RUN_DIR"
