"""What tools/bench/image_folder.py and csv_data.py share: Fashion-MNIST's IDX files (Debian's
dataset-fashion-mnist) and their class names, running amptrain, and its description of the CPU."""
import argparse
import gzip
import os
import re
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FMNIST = "/usr/share/datasets/fashion-mnist"
CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot"]
SPLITS = (("train", "train"), ("test", "t10k"))  # (split, IDX file prefix)


def idx(path):
    """An IDX file of unsigned bytes (gzip) as a numpy array."""
    with gzip.open(path) as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


def split_arrays(prefix):
    """(images uint8 [N, 28, 28], labels uint8 [N]) of one split."""
    return idx(f"{FMNIST}/{prefix}-images-idx3-ubyte.gz"), idx(f"{FMNIST}/{prefix}-labels-idx1-ubyte.gz")


def run(cmd):
    """(stdout + stderr, wall seconds) of a command that must succeed."""
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return p.stdout + p.stderr, wall


def arguments(work, out):
    """The command line both benchmarks take; makes --work."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--amptrain", default=os.path.join(ROOT, "build/tools/amptrain"))
    ap.add_argument("--work", default=os.path.join(ROOT, work))
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, out))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    return a


def amptrain_cpu(amp):
    """(the CPU's name, the AMP low type amptrain trains fastest here: bf16 where native, else fp16)."""
    version, _ = run([amp, "--version"])
    dtype = "bf16" if re.search(r"^bf16: native", version, re.M) else "fp16"
    cpu = next((l.split(": ", 1)[1] for l in version.splitlines() if l.startswith("cpu:")), "?")
    return cpu, dtype
