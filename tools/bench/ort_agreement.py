#!/usr/bin/env python3
"""Top-1 agreement of two ONNX classifiers on the Fashion-MNIST test set in
ONNX Runtime, e.g. the fp32 export and the `--export-amp` fp16 export of one
training run. Uses the same normalization as `amptrain train/eval`
(x/255, then (x - 0.2860) / 0.3530).

  .venv/bin/python tools/bench/ort_agreement.py A.onnx B.onnx [--data /usr/share/datasets/fashion-mnist]
"""
import argparse
import glob
import gzip
import os

import numpy as np
import onnxruntime as ort


def read_idx(path):
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def predict(model, x, batch=500):
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    dtype = np.float16 if "float16" in s.get_inputs()[0].type else np.float32
    return np.concatenate([s.run(None, {name: x[i:i + batch].astype(dtype)})[0] for i in range(0, len(x), batch)]).argmax(1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    images = read_idx(glob.glob(os.path.join(args.data, "t10k-images*"))[0]).astype(np.float32) / 255.0
    labels = read_idx(glob.glob(os.path.join(args.data, "t10k-labels*"))[0])
    x = ((images - 0.2860) / 0.3530)[:, None]
    pa, pb = predict(args.a, x), predict(args.b, x)
    print(f"top-1 agreement {100 * np.mean(pa == pb):.2f}% ({int(np.sum(pa != pb))} of {len(x)} differ); "
          f"accuracy {100 * np.mean(pa == labels):.2f}% and {100 * np.mean(pb == labels):.2f}%")


if __name__ == "__main__":
    main()
