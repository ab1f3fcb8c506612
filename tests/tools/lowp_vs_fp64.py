#!/usr/bin/env python3
"""Who is closer to the truth in a bf16/fp16 ONNX backend node test?

For each test name given, evaluates the test's graph in float64 (every
16-bit input and output retyped to double, softmax_precision too) with
onnx's reference evaluator, runs amptrain on the same graph (wrapped in
float32 -> 16-bit -> float32 Casts, since .npy has no bf16), and prints the
error of amptrain's output and of the suite's expected output against the
float64 result. Used to justify the skips of 1-ulp differences in
tests/e2e/backend_skips_current.txt.

  .venv/bin/python tests/tools/lowp_vs_fp64.py [--data DIR] [--amptrain BIN] TEST...
"""
import argparse
import glob
import os
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


def load(path, bf16):
    a = numpy_helper.to_array(onnx.load_tensor(path))
    if a.dtype.itemsize == 2 and a.dtype.kind not in "fiu":  # ml_dtypes bfloat16
        a = a.view(np.uint16)
    if bf16 and a.dtype == np.uint16:  # the suite stores bf16 as uint16 bits
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32) if a.dtype.kind == "f" else a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="build/onnx_backend_data_current/node")
    ap.add_argument("--amptrain", default="build/tools/amptrain")
    ap.add_argument("tests", nargs="+")
    args = ap.parse_args()
    for name in args.tests:
        model = onnx.load(f"{args.data}/{name}/model.onnx")
        g = model.graph
        low = g.input[0].type.tensor_type.elem_type
        bf16 = low == TensorProto.BFLOAT16
        ins = [load(f"{args.data}/{name}/test_data_set_0/input_{i}.pb", bf16) for i in range(len(g.input))]
        want = load(f"{args.data}/{name}/test_data_set_0/output_0.pb", bf16).astype(np.float64)

        m64 = onnx.load(f"{args.data}/{name}/model.onnx")
        for v in list(m64.graph.input) + list(m64.graph.output):
            if v.type.tensor_type.elem_type == low:
                v.type.tensor_type.elem_type = TensorProto.DOUBLE
        for n in m64.graph.node:
            for a in n.attribute:
                if a.name == "softmax_precision":
                    a.i = TensorProto.DOUBLE
        feeds = {v.name: (x.astype(np.float64) if x.dtype == np.float32 else x) for v, x in zip(m64.graph.input, ins)}
        truth = ReferenceEvaluator(m64).run(None, feeds)[0]

        nodes, inputs = [], []
        for v, x in zip(g.input, ins):
            if v.type.tensor_type.elem_type == low:
                inputs.append(helper.make_tensor_value_info(v.name + "_f32", TensorProto.FLOAT, list(x.shape)))
                nodes.append(helper.make_node("Cast", [v.name + "_f32"], [v.name], to=low))
            else:
                inputs.append(v)
        out = g.output[0].name
        nodes += list(g.node) + [helper.make_node("Cast", [out], [out + "_f32"], to=TensorProto.FLOAT)]
        wrapped = helper.make_model(
            helper.make_graph(nodes, "wrapped", inputs, [helper.make_tensor_value_info(out + "_f32", TensorProto.FLOAT, None)]),
            opset_imports=model.opset_import, ir_version=model.ir_version)
        with tempfile.TemporaryDirectory() as tmp:
            onnx.save(wrapped, f"{tmp}/m.onnx")
            cmd = [args.amptrain, "run", f"{tmp}/m.onnx", "-o", f"{tmp}/out"]
            for i, (v, x) in enumerate(zip(inputs, ins)):
                np.save(f"{tmp}/in{i}.npy", x)
                cmd += ["-i", f"{v.name}={tmp}/in{i}.npy"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                print(f"{name}: amptrain failed: {p.stderr.strip()[-300:]}")
                continue
            ours = np.load(glob.glob(f"{tmp}/out/*.npy")[0]).astype(np.float64)
        rel = lambda y: np.linalg.norm(y - truth) / np.linalg.norm(truth)
        print(f"{name}: rel L2 vs float64: amptrain {rel(ours):.3g}, expected output {rel(want):.3g}; "
              f"max abs: amptrain {np.abs(ours - truth).max():.3g}, expected {np.abs(want - truth).max():.3g}")


if __name__ == "__main__":
    main()
