"""Checks that ONNX Runtime's CPU provider computes the given ops in fp32 (or
wider) inside their fp16 kernels and rounds each result once: the property
amptrain's precision plan trusts for an export (amp/passes.h,
Capability::OnnxRuntimeComputesFp32Inside, plan rule 8).

usage: ort_fp32_inside.py OP [OP ...]   (ReduceMean ReduceSum ReduceL2 Softmax LogSoftmax)

Each op runs on fp16 inputs of 8192 values near 1 along the reduced axis:
accumulated in fp16, a sum would stall at 2048 (its step there is 2), so a
result equal to the float64 value rounded once to fp16 shows fp32
accumulation. Prints one line per op; exits 1 if any op is off by an ulp or
more, 2 on an op it cannot probe."""
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

N = 8192


def exact(op, x):
    if op == "ReduceMean":
        return x.mean(axis=1, keepdims=True)
    if op == "ReduceSum":
        return x.sum(axis=1, keepdims=True)
    if op == "ReduceL2":
        return np.sqrt((x * x).sum(axis=1, keepdims=True))
    z = x - x.max(axis=1, keepdims=True)
    if op == "Softmax":
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def main(ops):
    rng = np.random.default_rng(0)
    x = (1.0 + 0.01 * rng.standard_normal((2, N))).astype(np.float16)
    bad = 0
    for op in ops:
        if op not in ("ReduceMean", "ReduceSum", "ReduceL2", "Softmax", "LogSoftmax"):
            print(f"{op}: no probe for this op", file=sys.stderr)
            return 2
        inputs, inits, attrs = ["x"], [], {}
        if op.startswith("Reduce"):
            inputs.append("axes")
            inits.append(helper.make_tensor("axes", TensorProto.INT64, [1], [1]))
        else:
            attrs["axis"] = 1
        graph = helper.make_graph([helper.make_node(op, inputs, ["y"], **attrs)], "probe",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, N])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        y = sess.run(None, {"x": x})[0].astype(np.float64)
        want = exact(op, x.astype(np.float64)).astype(np.float16)
        ulps = float(np.max(np.abs(y - want.astype(np.float64)) / np.spacing(np.abs(want)).astype(np.float64)))
        print(f"{op}: {ulps:.2f} fp16 ulps from the exact value rounded once (onnxruntime {ort.__version__})")
        bad += ulps >= 1.0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
