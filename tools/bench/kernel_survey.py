#!/usr/bin/env python3
"""Which kernels a zoo of PyTorch exports trains on: per model, the share of a training step's kernel time that
each implementation (direct, onednn, reference) takes, and the slowest nodes left on the reference kernels.

The reference kernels are the oracle (double accumulation, one element at a time); a node that lands there in a
real model is a candidate for a direct or oneDNN kernel. Models: tools/bench/torchvision_coverage.py's builders
(torchvision classifiers, its custom models, model_zoo.py's, timm's as "timm.NAME"), exported with TorchScript in
training mode (do_constant_folding=False), then `amptrain bench MODEL --train --profile`.

  .cache/torch-pypi/bin/python tools/bench/kernel_survey.py --models zoo,resnet18 [--amp O2 --dtype bf16]
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchvision_coverage as tc  # noqa: E402  (beside this script)
import model_zoo  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def profile(amptrain, path, batch, threads, extra):
    cmd = [amptrain, "bench", path, "--train", "--batch", str(batch), "--threads", str(threads), "--profile",
           "--profile-top", "400", "--repeat", "5", "--warmup", "2"] + extra
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    text = p.stdout + p.stderr
    shares = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(direct|onednn|reference)\s+\d+\s+[\d.]+\s+([\d.]+)%",
                                                                 text, re.M)}
    ref_nodes = re.findall(r"^(.*) \((\w+), reference\)\s+\d+\s+([\d.]+)\s+([\d.]+)%", text, re.M)
    by_op = {}
    for _, op, _, share in ref_nodes:
        by_op[op] = by_op.get(op, 0.0) + float(share)
    step = re.search(r"step median ([\d.]+) ms", text)
    return {"shares": shares, "ref_ops": sorted(by_op.items(), key=lambda kv: -kv[1]),
            "step_ms": float(step.group(1)) if step else None}, None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="zoo")
    p.add_argument("--out", default=os.path.join(ROOT, "build", "kernel_survey"))
    p.add_argument("--amptrain", default=os.path.join(ROOT, "build", "tools", "amptrain"))
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--amp", default="", help="O1|O2|O3 (default fp32)")
    p.add_argument("--dtype", default="bf16")
    args = p.parse_args()
    sets = {"zoo": list(model_zoo.ZOO), "timm": ["timm." + t for t in tc.TIMM]}
    models = [m for item in args.models.split(",") for m in (sets.get(item) or [item])]
    extra = ["--amp", args.amp, "--dtype", args.dtype] if args.amp else []
    os.makedirs(args.out, exist_ok=True)
    print("| model | step ms | direct | onednn | reference | reference ops (share of the step) |")
    print("|---|---|---|---|---|---|")
    for name in models:
        path = os.path.join(args.out, f"{name}.train.onnx")
        try:
            if not os.path.exists(path):
                model, x = tc.build(name)
                model.train()
                tc.export(model, x, path, "ts", train=True)
        except Exception as e:  # noqa: BLE001  (a model PyTorch cannot export is a row, not a stop)
            print(f"| {name} | export fails: {tc.first_line(e)[:80]} | | | | |", flush=True)
            continue
        r, err = profile(args.amptrain, path, args.batch, args.threads, extra)
        if err:
            print(f"| {name} | amptrain fails: {err[:100]} | | | | |", flush=True)
            continue
        s = r["shares"]
        ops = ", ".join(f"{op} {share:.1f}%" for op, share in r["ref_ops"][:5] if share >= 0.5)
        print(f"| {name} | {r['step_ms']:.1f} | {s.get('direct', 0):.1f}% | {s.get('onednn', 0):.1f}% | "
              f"{s.get('reference', 0):.1f}% | {ops} |", flush=True)


if __name__ == "__main__":
    main()
