#!/usr/bin/env python3
"""Run an ONNX model in ONNX Runtime (CPUExecutionProvider) and save its outputs.

Run with the project venv: .venv/bin/python (PyPI onnx + onnxruntime; scripts/setup.sh).

  ort_run.py MODEL.onnx --input input_0=x.npy [--input NAME=FILE.npy ...] --output-dir OUT
  ort_run.py MODEL.onnx --random-inputs IN_DIR --seed 0 --batch 2 --output-dir OUT
  ort_run.py MODEL.onnx --check            # only onnx.checker (full_check=True)

Outputs are written as OUT/<output name>.npy.
--random-inputs writes a seeded random array for every graph input (that is not also
given with --input) to IN_DIR/<input name>.npy and runs on it: floats are standard
normal, ints are uniform in [0, 10), bools are random. Symbolic dims become --batch
unless set with --dim NAME=VALUE. Initializers listed as graph inputs are not inputs.
--check runs onnx.checker.check_model(path, full_check=True) first; on failure it
prints the error and exits 1.
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort


def random_input(vi, rng, batch, dims):
    tt = vi.type.tensor_type
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
    shape = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            shape.append(d.dim_value)
        else:
            shape.append(dims.get(d.dim_param, batch))
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(0, 10, shape).astype(dtype)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    p.add_argument("--output-dir")
    p.add_argument("--check", action="store_true")
    p.add_argument("--random-inputs", metavar="DIR")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE")
    args = p.parse_args()

    if args.check:
        try:
            onnx.checker.check_model(args.model, full_check=True)
        except Exception as e:  # checker raises ValidationError / InferenceError
            print(f"onnx.checker FAILED for {args.model}:\n{e}", file=sys.stderr)
            return 1
        print(f"onnx.checker OK: {args.model}")
        if not (args.input or args.random_inputs or args.output_dir):
            return 0

    feeds = {}
    for spec in args.input:
        name, _, path = spec.partition("=")
        feeds[name] = np.load(path)

    model = onnx.load(args.model, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    graph_inputs = [vi for vi in model.graph.input if vi.name not in inits]
    missing = [vi for vi in graph_inputs if vi.name not in feeds]
    if missing and args.random_inputs:
        os.makedirs(args.random_inputs, exist_ok=True)
        rng = np.random.default_rng(args.seed)
        dims = {k: int(v) for k, v in (d.split("=") for d in args.dim)}
        for vi in missing:
            feeds[vi.name] = random_input(vi, rng, args.batch, dims)
            np.save(os.path.join(args.random_inputs, vi.name + ".npy"), feeds[vi.name])
    elif missing:
        print(f"missing inputs: {[vi.name for vi in missing]} (use --input or --random-inputs)",
              file=sys.stderr)
        return 1

    sess = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    results = sess.run(names, feeds)
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
    for name, value in zip(names, results):
        print(f"{name}: shape {list(np.shape(value))} dtype {np.asarray(value).dtype}")
        if args.output_dir:
            np.save(os.path.join(args.output_dir, name + ".npy"), value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
