#!/usr/bin/env bash
# Two amptrain binaries side by side: SimpleCNN 3x32x32 training images/s
# (median of the progress windows after the first) and peak RSS, batch 32 and
# 128, ROUNDS rounds (default 3) interleaved A, B, A, B, ...
#   tools/bench/ab_train.sh OLD_AMPTRAIN NEW_AMPTRAIN
set -euo pipefail
A=$1 B=$2 ROUNDS=${ROUNDS:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$B" models write simplecnn --in-channels 3 --image-size 32 -o "$WORK/scnn.onnx" >/dev/null
export OMP_WAIT_POLICY=passive
for round in $(seq "$ROUNDS"); do
  for b in 32 128; do
    for v in A B; do
      bin=$A; [ $v = B ] && bin=$B
      steps=$(( b == 32 ? 200 : 60 )); win=$(( b == 32 ? 40 : 12 ))
      rm -f "$WORK/m.jsonl"
      /usr/bin/time -f "%M" -o "$WORK/rss" "$bin" train "$WORK/scnn.onnx" --data synthetic:N=2048,C=3,H=32,W=32,classes=10 \
        --steps $steps --log-every $win --batch-size $b --threads 2 --metrics "$WORK/m.jsonl" >/dev/null 2>&1
      python3 -c "
import json, statistics
w = [r['images_per_s'] for r in map(json.loads, open('$WORK/m.jsonl')) if r.get('event') == 'progress'][1:]
print('$v b$b round $round', round(statistics.median(w), 1), 'images/s, peak RSS', open('$WORK/rss').read().strip(), 'KB')"
    done
  done
done
