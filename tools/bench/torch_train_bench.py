#!/usr/bin/python3
"""PyTorch eager training throughput of SimpleCNN on Fashion-MNIST (CPU).

Run with Debian's python (torch 1.13, numpy):
  /usr/bin/python3 tools/bench/torch_train_bench.py --batch 128 --threads 2 \
      --warmup 5 --steps 60 --window 10 [--data /usr/share/datasets/fashion-mnist]

The recipe matches `amptrain train` defaults: SimpleCNN from
models/torch/export_models.py (train mode: BatchNorm batch statistics, Dropout
0.5), Adam lr 1e-3, cross-entropy, pixels normalized as (x/255-0.2860)/0.3530,
data shuffled with a fixed seed. Batches are sliced from a pre-normalized
tensor outside the timed region, as amptrain's progress windows time only
Trainer::Step. --warmup steps are run first and not timed; then --steps steps
are timed in windows of --window steps. Prints one JSON line: images/s per
window, their median, min and max.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "models", "torch"))
from export_models import SimpleCNN  # noqa: E402


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    images = load_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))
    labels = load_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz"))
    x_all = torch.from_numpy(((images.astype(np.float32) / 255.0 - 0.2860) / 0.3530)[:, None])
    y_all = torch.from_numpy(labels.astype(np.int64))
    order = torch.from_numpy(np.random.default_rng(a.seed).permutation(len(y_all)))

    model = SimpleCNN()
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def batch(i):
        start = (i * a.batch) % (len(order) - a.batch + 1)
        idx = order[start:start + a.batch]
        return x_all[idx].contiguous(), y_all[idx].contiguous()

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for i in range(a.warmup):
        step(*batch(i))
    windows, t_window, n_window, loss = [], 0.0, 0, float("nan")
    for i in range(a.warmup, a.warmup + a.steps):
        x, y = batch(i)
        t0 = time.perf_counter()
        loss = step(x, y)
        t_window += time.perf_counter() - t0
        n_window += 1
        if n_window == a.window:
            windows.append(a.window * a.batch / t_window)
            t_window, n_window = 0.0, 0
    print(json.dumps({"runtime": f"pytorch {torch.__version__}", "batch": a.batch, "threads": a.threads,
                      "windows": windows, "median": statistics.median(windows), "min": min(windows),
                      "max": max(windows), "last_loss": loss}))


if __name__ == "__main__":
    main()
