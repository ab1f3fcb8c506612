#!/usr/bin/env python3
"""Mixed-precision training over the torchvision coverage exports: does every level train, and are the
low-precision gradients as accurate as PyTorch's own autocast ones?

  .cache/torch-pypi/bin/python tools/bench/amp_coverage.py [--models a,b] [--steps 6] [--threads 2]
      [--exports build/torchvision_coverage] [--out docs/amp_coverage.md]

Reads the training exports that tools/bench/torchvision_coverage.py writes (EXPORTS/<model>.<exporter>/
train.onnx with its x.npy and y.npy: batch 2 (or the export's fixed batch), random weights, seed 0). For each:
  1. `amptrain train` for --steps steps on that batch (Adam, lr 1e-4) at O1 bf16, O1 fp16, O2 bf16,
     O2 fp16 and O3 bf16 (fp16 with its default dynamic loss scale, 2^16 at first): the first and last
     loss, the steps the loss scale skipped, or the error. A forward inf/NaN shows as a non-finite loss.
  2. `amptrain grad --amp O1` in bf16 and in fp16 (static loss scale 1024, divided out), judged as issue
     8's gradient check is: each parameter's error against PyTorch's float64 gradient, next to PyTorch
     autocast's own error (torch.autocast("cpu", dtype) on the same model, input and labels, its fp16
     loss scaled by the same 1024). The cell gives how many parameters are over 2x autocast's error, the
     worst ratio, and the median ratio. Parameters whose float64 gradient is 0 to within float32's own
     error (a bias ahead of a training-mode BatchNorm has gradient exactly 0) measure noise on both
     sides and are left out; their count is given, and so is the count of those where autocast's own
     gradient is inf/NaN (no yardstick there; ours is still checked for being finite).
Batch 2 at 64 px with random weights is badly conditioned: PyTorch's autocast itself is 30-100% off on
most BatchNorm parameters of the deep CNNs (docs/amp_coverage.md); the check is relative to it.
"""
import argparse
import copy
import datetime
import functools
import glob
import json
import os
import platform
import subprocess
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import torchvision_coverage as tc  # noqa: E402  (build(): the same seeded models as the exports)

TRAIN_CONFIGS = [("O1", "bf16"), ("O1", "fp16"), ("O2", "bf16"), ("O2", "fp16"), ("O3", "bf16")]
GRAD_DTYPES = ["bf16", "fp16"]
GRAD_SCALE = 1024.0


@functools.lru_cache(maxsize=None)
def batch_first(work, d, name):
    """x.npy as train's data wants it, [N, ...], and the flags that say where the model takes its batch: a
    sequence-major export ([T, B, ...] input, B = the label count) reads x with its batch axis moved first
    through `--batch-axis` (once per model: every level's run reads the same file)."""
    x, y = np.load(os.path.join(d, "x.npy")), np.load(os.path.join(d, "y.npy"))
    if x.ndim < 2 or x.shape[0] == y.shape[0] or y.shape[0] not in x.shape[1:]:
        return os.path.join(d, "x.npy"), ()
    axis = 1 + list(x.shape[1:]).index(y.shape[0])
    moved = os.path.join(work, f"{name}.x_batch_first.npy")
    np.save(moved, np.ascontiguousarray(np.moveaxis(x, axis, 0)))
    return moved, ("--batch-axis", str(axis))


def train_cell(args, d, name, data_input, level, dtype):
    metrics = os.path.join(args.work, f"{name}.{level}.{dtype}.metrics.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    x_file, extra = batch_first(args.work, d, name)
    cmd = [args.amptrain, "train", os.path.join(d, "train.onnx"), "--data",
           f"npy:{data_input}={x_file},labels={d}/y.npy", "--batch-size", str(len(np.load(f"{d}/y.npy"))),
           "--steps", str(args.steps), "--log-every", "1", "--lr", "1e-4", "--threads", str(args.threads),
           "--amp", level, "--dtype", dtype, "--metrics", metrics, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if p.returncode != 0:
        return {"error": tc.amptrain_error(p)}
    rows = [json.loads(l) for l in open(metrics)]
    prog = [r for r in rows if r.get("event") == "progress"]
    losses = [r.get("loss") for r in prog]
    skipped = max([r.get("skipped_steps", 0) or 0 for r in prog] or [0])
    return {"first": losses[0] if losses else None, "last": losses[-1] if losses else None, "skipped": skipped,
            "steps": len(prog)}


def torch_grads(name, x, y, dtype):
    """Parameter gradients of the seeded model: float64, float32, or autocast(dtype) with GRAD_SCALE."""
    import torch
    import torch.nn.functional as F
    model, _ = tc.build(name)
    m = copy.deepcopy(model)
    if dtype == "f64":
        m = m.double()
    m.train()
    xin = torch.from_numpy(x)
    if xin.is_floating_point():
        xin = xin.to(next(m.parameters()).dtype)
    ac = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype)
    with torch.autocast("cpu", dtype=ac or torch.bfloat16, enabled=ac is not None):
        out = m(xin)
    loss = F.cross_entropy(out.float() if ac else out, torch.from_numpy(y))
    scale = GRAD_SCALE if dtype == "fp16" else 1.0
    (loss * scale).backward()
    return {n: p.grad.detach().double().numpy() / scale for n, p in m.named_parameters() if p.grad is not None}


def grad_cell(args, d, name, data_input, dtype, refs):
    """refs[dtype] may be an error string: PyTorch's autocast could not run (its CPU LSTM has no fp16)."""
    out = os.path.join(args.work, f"{name}.grad.{dtype}")
    cmd = [args.amptrain, "grad", os.path.join(d, "train.onnx"), "-i",
           f"{data_input}={d}/x.npy", "--labels", f"{d}/y.npy", "-o", out,
           "--threads", str(args.threads), "--amp", "O1", "--dtype", dtype]
    if dtype == "fp16":
        cmd += ["--loss-scale", str(int(GRAD_SCALE))]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if p.returncode != 0:
        return {"error": tc.amptrain_error(p)}
    g64, g32, gac = refs["f64"], refs["f32"], refs[dtype]
    if isinstance(gac, str):  # no yardstick: ours is checked for being finite and present only
        gac = None
    ratios, zero, missing, nonfinite, both_nonfinite, ac_nonfinite = [], 0, 0, 0, 0, 0
    for n, r in g64.items():
        f = os.path.join(out, "grads", n + ".npy")
        if not os.path.exists(f):
            missing += 1
            continue
        ours = np.load(f).astype(np.float64)
        if not np.all(np.isfinite(ours)):
            # Where autocast overflows too, the scale is too large for this tensor's fp16 gradient.
            if gac is not None and not np.all(np.isfinite(gac[n])):
                both_nonfinite += 1
            else:
                nonfinite += 1
            continue
        n64, e32 = np.linalg.norm(r), np.linalg.norm(g32[n] - r)
        if n64 <= 10 * e32:  # 0 to within float32's own error: noise on both sides
            zero += 1
            continue
        if gac is None or not np.all(np.isfinite(gac[n])):  # autocast failed or overflowed: no yardstick
            ac_nonfinite += 1
            continue
        e_ours, e_ac = np.linalg.norm(ours - r), np.linalg.norm(gac[n] - r)
        ratios.append((e_ours / max(e_ac, 1e-300), n, e_ours / n64, e_ac / n64))
    ratios.sort(reverse=True)
    return {"params": len(g64), "judged": len(ratios), "zero": zero, "missing": missing, "nonfinite": nonfinite,
            "both_nonfinite": both_nonfinite, "autocast_nonfinite": ac_nonfinite, "autocast_error": refs[dtype] if isinstance(refs[dtype], str) else None,
            "over2": sum(1 for r in ratios if r[0] > 2), "worst": ratios[0] if ratios else None,
            "median": float(np.median([r[0] for r in ratios])) if ratios else None}


def fmt_train(c):
    if "error" in c:
        return "**error**: " + c["error"].replace("|", "/")
    if c["first"] is None:
        return "no progress"
    ok = all(np.isfinite([c["first"], c["last"]]))
    s = f"{c['first']:.3g} -> {c['last']:.3g}" if ok else f"**non-finite** {c['first']} -> {c['last']}"
    return s + (f", {c['skipped']} skipped" if c["skipped"] else "")


def fmt_grad(c):
    if "error" in c:
        return "**error**: " + c["error"].replace("|", "/")
    w = c["worst"]
    s = f"{c['over2']} of {c['judged']} over 2x"
    if w:
        s += f", worst {w[0]:.2f} ({w[1]}: {w[2]:.1e} vs {w[3]:.1e}), median {c['median']:.2f}"
    extra = []
    if c["zero"]:
        extra.append(f"{c['zero']} zero")
    if c["nonfinite"]:
        extra.append(f"**{c['nonfinite']} non-finite**")
    if c.get("both_nonfinite"):
        extra.append(f"{c['both_nonfinite']} non-finite in both (fp16 overflows at this scale; not judged)")
    if c.get("autocast_error"):
        return f"no yardstick: PyTorch's autocast fails ({c['autocast_error'][:80]}); " + \
            (", ".join(extra) if extra else "ours finite")
    if c.get("autocast_nonfinite"):
        extra.append(f"{c['autocast_nonfinite']} non-finite in autocast (not judged)")
    if c["missing"]:
        extra.append(f"**{c['missing']} missing**")
    return s + (f"; {', '.join(extra)}" if extra else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exports", default=os.path.join(ROOT, "build/torchvision_coverage"))
    ap.add_argument("--models", default="", help="comma-separated model names (default: every export there)")
    ap.add_argument("--amptrain", default=os.path.join(ROOT, "build/tools/amptrain"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--work", default=os.path.join(ROOT, "build/amp_coverage"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/amp_coverage.md"))
    ap.add_argument("--fresh", action="store_true", help="ignore the cases of an interrupted run")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    dirs = sorted(d for d in glob.glob(os.path.join(args.exports, "*.*")) if os.path.exists(os.path.join(d, "train.onnx")))
    wanted = set(filter(None, args.models.split(",")))
    exported = {os.path.basename(d).rsplit(".", 1)[0] for d in dirs}
    models = sorted(exported & wanted if wanted else exported)
    if not models:
        sys.exit(f"no training exports in {args.exports}: run tools/bench/torchvision_coverage.py first")
    results = []
    # Resumable: the cases of an interrupted run (results.partial.jsonl) are kept unless --fresh.
    partial = os.path.join(args.work, "results.partial.jsonl")
    done = {}
    if os.path.exists(partial) and not args.fresh:
        for line in open(partial):
            r = json.loads(line)
            done[(r["model"], r["exporter"])] = r
    elif os.path.exists(partial):
        os.remove(partial)
    for model in models:
        exps = [(d, os.path.basename(d).rsplit(".", 1)[1]) for d in dirs
                if os.path.basename(d).rsplit(".", 1)[0] == model]
        todo = [(d, exporter) for d, exporter in exps if (model, exporter) not in done]
        if not todo:
            results += [done[(model, exporter)] for _, exporter in exps]
            continue
        x, y = np.load(os.path.join(todo[0][0], "x.npy")), np.load(os.path.join(todo[0][0], "y.npy"))
        refs = {}
        for k in ["f64", "f32"] + GRAD_DTYPES:
            try:
                refs[k] = torch_grads(model, x, y, k)
            except RuntimeError as e:
                if k in ("f64", "f32"):
                    raise
                refs[k] = str(e).strip().splitlines()[0]
        for d, exporter in todo:
            name = os.path.basename(d)
            r = {"model": model, "exporter": exporter}
            data_input = tc.onnx_io(os.path.join(d, "train.onnx"))[0][0]
            for level, dtype in TRAIN_CONFIGS:
                r[f"train {level} {dtype}"] = train_cell(args, d, name, data_input, level, dtype)
            for dtype in GRAD_DTYPES:
                r[f"grad O1 {dtype}"] = grad_cell(args, d, name, data_input, dtype, refs)
            done[(model, exporter)] = r
            print(json.dumps(r, default=str), flush=True)
            with open(partial, "a") as f:
                f.write(json.dumps(r, default=str) + "\n")
        results += [done[(model, exporter)] for _, exporter in exps]
    with open(os.path.join(args.work, "results.jsonl"), "w") as f:
        for r in results:
            f.write(json.dumps(r, default=str) + "\n")
    if os.path.exists(partial):
        os.remove(partial)
    version = subprocess.run([args.amptrain, "--version"], capture_output=True, text=True).stdout.strip()
    import torch
    with open(args.out, "w") as f:
        f.write("# Mixed-precision training over the " + ("model_zoo" if "zoo" in args.exports else "torchvision coverage") +
                f" exports (`--exports {os.path.relpath(args.exports, ROOT)}`)\n\n")
        f.write(f"`tools/bench/amp_coverage.py --steps {args.steps} --threads {args.threads}` on "
                f"{datetime.date.today()}, {platform.machine()}, PyTorch {torch.__version__}; the exports of "
                "tools/bench/torchvision_coverage.py (batch 2, random weights, seed 0; docs/torchvision_coverage.md)."
                " What each column measures is in the script's docstring.\n\n```\n" + version + "\n```\n\n")
        f.write("## Training steps (loss of the first and last step; steps the loss scale skipped)\n\n")
        cols = [f"train {l} {t}" for l, t in TRAIN_CONFIGS]
        f.write("| model | exporter | " + " | ".join(c[6:] for c in cols) + " |\n")
        f.write("|---|---|" + "---|" * len(cols) + "\n")
        for r in results:
            f.write(f"| {r['model']} | {r['exporter']} | " + " | ".join(fmt_train(r[c]) for c in cols) + " |\n")
        f.write("\n## O1 gradients against PyTorch autocast (error vs float64, ours / autocast's)\n\n")
        f.write("| model | exporter | O1 bf16 | O1 fp16 (scale 1024) |\n|---|---|---|---|\n")
        for r in results:
            f.write(f"| {r['model']} | {r['exporter']} | " +
                    " | ".join(fmt_grad(r[f'grad O1 {t}']) for t in GRAD_DTYPES) + " |\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
