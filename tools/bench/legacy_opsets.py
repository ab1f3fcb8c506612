#!/usr/bin/env python3
"""Ops in the encodings of opsets 7-10, one node per model, run by amptrain and by ONNX Runtime.

    .venv/bin/python tools/bench/legacy_opsets.py [--amptrain build/tools/amptrain] [--out build/legacy_opsets]

Each case is a one-node model written at an old opset with onnx.helper (Upsample with a scales
attribute or input, Resize-10, Scatter, Slice / TopK / Pad / Clip with their old attributes,
BatchNormalization with `spatial`, ...). ONNX Runtime, which implements those opsets itself, is
the oracle: amptrain's output must match it within 1e-5 relative L2 (exactly for the integer and
index outputs). Prints a markdown table; exits non-zero when a case fails.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
rng = np.random.default_rng(0)


def model(opset, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "legacy", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 3 if opset < 8 else 4 if opset < 10 else 5
    return m


F = TensorProto.FLOAT


def cases():
    x4 = [("x", [2, 3, 4, 5])]
    yield "Upsample-7 nearest 2x3", model(7, [helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0])],
                                            x4, [("y", F)])
    yield "Upsample-7 nearest 1.5x", model(7, [helper.make_node("Upsample", ["x"], ["y"], mode="nearest",
                                                                scales=[1.0, 1.0, 1.5, 2.5])], x4, [("y", F)])
    yield "Upsample-7 linear 2x", model(7, [helper.make_node("Upsample", ["x"], ["y"], mode="linear",
                                                             scales=[1.0, 1.0, 2.0, 2.0])], x4, [("y", F)])
    s = helper.make_tensor("s", F, [4], [1.0, 1.0, 2.0, 1.5])
    yield "Upsample-9 nearest", model(9, [helper.make_node("Upsample", ["x", "s"], ["y"])], x4, [("y", F)], [s])
    yield "Upsample-9 linear", model(9, [helper.make_node("Upsample", ["x", "s"], ["y"], mode="linear")], x4,
                                     [("y", F)], [s])
    yield "Resize-10 nearest", model(10, [helper.make_node("Resize", ["x", "s"], ["y"])], x4, [("y", F)], [s])
    yield "Resize-10 linear", model(10, [helper.make_node("Resize", ["x", "s"], ["y"], mode="linear")], x4,
                                    [("y", F)], [s])
    idx = helper.make_tensor("i", TensorProto.INT64, [2, 2], [1, 0, 2, 1])
    upd = helper.make_tensor("u", F, [2, 2], [10.0, 20.0, 30.0, 40.0])
    for opset in (9, 10):
        yield f"Scatter-{opset} axis 1", model(opset, [helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)],
                                               [("x", [3, 4])], [("y", F)], [idx, upd])
    yield "Slice-1 axes", model(7, [helper.make_node("Slice", ["x"], ["y"], starts=[1, 0], ends=[1000, -1], axes=[1, 3])],
                                x4, [("y", F)])
    yield "Slice-1 no axes", model(9, [helper.make_node("Slice", ["x"], ["y"], starts=[0, 1, 1], ends=[1, 3, -1])], x4,
                                   [("y", F)])
    yield "TopK-1", model(9, [helper.make_node("TopK", ["x"], ["v", "i"], k=3, axis=-1)], x4,
                          [("v", F), ("i", TensorProto.INT64)])
    yield "Pad-2 constant value", model(7, [helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 1, 0, 1],
                                                             value=1.5)], x4, [("y", F)])
    for mode in ("reflect", "edge"):
        yield f"Pad-2 {mode}", model(10, [helper.make_node("Pad", ["x"], ["y"], mode=mode, pads=[0, 0, 1, 2, 0, 0, 2, 1])],
                                     x4, [("y", F)])
    yield "Clip-6 min, max", model(7, [helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.25)], x4, [("y", F)])
    yield "Clip-6 max only", model(10, [helper.make_node("Clip", ["x"], ["y"], max=0.1)], x4, [("y", F)])
    yield "Clip-6 min only", model(9, [helper.make_node("Clip", ["x"], ["y"], min=0.0)], x4, [("y", F)])
    c = 3
    bn = [helper.make_tensor(n, F, [c], v) for n, v in
          [("g", [1.0, 0.5, 2.0]), ("b", [0.0, 0.1, -0.2]), ("m", [0.1, -0.2, 0.3]), ("v", [1.0, 0.5, 2.0])]]
    yield "BatchNormalization-7 spatial", model(7, [helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"],
                                                                     ["y"], spatial=1, epsilon=1e-3)], x4, [("y", F)], bn)
    yield "Dropout-7 (inference)", model(7, [helper.make_node("Dropout", ["x"], ["y"], ratio=0.3)], x4, [("y", F)])
    yield "MaxPool-8", model(8, [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], x4,
                             [("y", F)])
    yield "AveragePool-7 pads", model(7, [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3],
                                                           pads=[1, 1, 1, 1], count_include_pad=1)], x4, [("y", F)])
    yield "Softmax-1 axis 2 (3-D)", model(7, [helper.make_node("Softmax", ["x"], ["y"], axis=2)], [("x", [2, 3, 4])],
                                          [("y", F)])
    yield "ImageScaler-1 (opset 8)", model(8, [helper.make_node("ImageScaler", ["x"], ["y"], scale=0.5,
                                                                bias=[0.1, -0.2, 0.3])], x4, [("y", F)])
    yield "Gemm-7", model(7, [helper.make_node("Gemm", ["x", "w", "bias"], ["y"], transB=1, alpha=0.5, beta=2.0)],
                          [("x", [2, 4])], [("y", F)],
                          [helper.make_tensor("w", F, [3, 4], rng.standard_normal(12).tolist()),
                           helper.make_tensor("bias", F, [3], [0.1, 0.2, 0.3])])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amptrain", default=os.path.join(ROOT, "build/tools/amptrain"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/legacy_opsets"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows, failed = [], 0
    for k, (name, m) in enumerate(cases()):
        d = os.path.join(a.out, f"case{k}")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        feeds = {}
        args = []
        for inp in m.graph.input:
            if inp.name in {t.name for t in m.graph.initializer}:
                continue
            shape = [dim.dim_value for dim in inp.type.tensor_type.shape.dim]
            feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)
            np.save(os.path.join(d, inp.name + ".npy"), feeds[inp.name])
            args += ["-i", f"{inp.name}={os.path.join(d, inp.name + '.npy')}"]
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
        out = os.path.join(d, "out")
        p = subprocess.run([a.amptrain, "run", path, *args, "-o", out], capture_output=True, text=True)
        if p.returncode:
            rows.append((name, m.opset_import[0].version, "**fail** " + p.stderr.strip().splitlines()[-1][:160]))
            failed += 1
            continue
        # `run` writes each output as <name>.npy.
        got = [np.load(os.path.join(out, o.name + ".npy")) for o in m.graph.output]
        errs = []
        ok = len(got) == len(want)
        for g_, w_ in zip(got, want):
            if g_.shape != w_.shape or g_.dtype != w_.dtype:
                ok = False
                errs.append(f"{g_.dtype}{list(g_.shape)} vs {w_.dtype}{list(w_.shape)}")
                continue
            if np.issubdtype(w_.dtype, np.integer):
                e = float(np.abs(g_.astype(np.int64) - w_).max()) if w_.size else 0.0
                ok = ok and e == 0
            else:
                e = float(np.linalg.norm(g_.astype(np.float64) - w_) / max(np.linalg.norm(w_.astype(np.float64)), 1e-30))
                ok = ok and e <= 1e-5
            errs.append(f"{e:.1e}")
        rows.append((name, m.opset_import[0].version, ("ok " if ok else "**fail** ") + ", ".join(errs)))
        failed += not ok
    print("| case | opset | amptrain against ONNX Runtime (relative L2; integer outputs: max difference) |")
    print("|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")
    print(f"\n{len(rows) - failed} of {len(rows)} match")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
