#!/usr/bin/env python3
"""Times ONNX Runtime (CPUExecutionProvider) on a model with random inputs.

  python3 tools/bench/ort_bench.py MODEL.onnx --batch 32 --threads 2 --warmup 3 --repeat 10

Prints one JSON line: {"runtime": "onnxruntime", "batch":..., "median_ms":..., "min_ms":..., "max_ms":...}.
Symbolic dims other than the batch dim are set to 1.
"""
import argparse, json, statistics, time

import numpy as np
import onnxruntime as ort


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeat", type=int, default=10)
    a = p.parse_args()
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        shape = [a.batch if k == 0 and not isinstance(d, int) else (d if isinstance(d, int) else 1)
                 for k, d in enumerate(i.shape)]
        if "int64" in i.type:
            feeds[i.name] = rng.integers(0, 10, size=shape).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    for _ in range(a.warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({"runtime": "onnxruntime " + ort.__version__, "batch": a.batch, "threads": a.threads,
                      "median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times)}))


if __name__ == "__main__":
    main()
