#!/usr/bin/env python3
"""Top-1 accuracy and mean cross-entropy of an ONNX classifier on the
Fashion-MNIST (or MNIST) test set with ONNX Runtime, using the same
normalization as `amptrain train/eval` (executor/data/dataset.h:
x/255, then (x - mean) / std; Fashion-MNIST 0.2860/0.3530, MNIST 0.1307/0.3081).

  python3 tools/bench/ort_eval.py MODEL.onnx [--data /usr/share/datasets/fashion-mnist]
      [--mnist] [--batch 128] [--threads 2]

Needs numpy and onnxruntime: run it with .venv/bin/python (scripts/setup.sh). Reads the IDX files raw or gzipped.
"""
import argparse
import gzip
import os

import numpy as np
import onnxruntime as ort


def read_idx(path):
    for candidate in (path, path + ".gz"):
        if os.path.exists(candidate):
            opener = gzip.open if candidate.endswith(".gz") else open
            with opener(candidate, "rb") as f:
                data = f.read()
            break
    else:
        raise SystemExit(f"ort_eval: missing {path}[.gz]")
    if data[:2] != b"\0\0" or data[2] != 8:
        raise SystemExit(f"ort_eval: {path} is not an unsigned-byte IDX file")
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--mnist", action="store_true", help="MNIST normalization (0.1307/0.3081)")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    mean, std = (0.1307, 0.3081) if a.mnist else (0.2860, 0.3530)
    images = read_idx(os.path.join(a.data, "t10k-images-idx3-ubyte"))
    labels = read_idx(os.path.join(a.data, "t10k-labels-idx1-ubyte")).astype(np.int64)
    # Same arithmetic as amptrain's lookup table: float32(x / 255), then (v - mean) / std in float32.
    x = ((images.astype(np.float32) / np.float32(255.0) - np.float32(mean)) / np.float32(std))[:, None, :, :]

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(a.model, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    correct, loss_sum = 0, 0.0
    for i in range(0, len(x), a.batch):
        logits = sess.run(None, {name: x[i:i + a.batch]})[0].astype(np.float64)
        y = labels[i:i + a.batch]
        correct += int((logits.argmax(axis=1) == y).sum())
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss_sum += float(-logp[np.arange(len(y)), y].sum())
    print(f"onnxruntime {ort.__version__}: {a.model} on {a.data} ({len(x)} samples): "
          f"loss {loss_sum / len(x):.4f} accuracy {100.0 * correct / len(x):.2f}%")


if __name__ == "__main__":
    main()
