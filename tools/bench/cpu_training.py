#!/usr/bin/env python3
"""fp32 CPU training throughput: amptrain against ONNX Runtime training, PyTorch eager and torch.compile, one run.

  .cache/torch-pypi/bin/python tools/bench/cpu_training.py [--threads 2] [--runs 3]
      [--amptrain build/tools/amptrain] [--out docs/benchmarks/cpu_training.md]

The venv needs PyPI's torch, torchvision, onnx and onnxruntime-training-cpu (which conflicts with the plain
onnxruntime package, hence its own venv): `.cache/torch-pypi/bin/pip install torch torchvision onnx
onnxruntime-training-cpu`.

Cases (issue 12): SimpleCNN 3x32x32 at batch 32 and 128, ResNet-18 (torchvision layout, 10 classes) 3x64x64
at batch 32; fp32, Adam(W) lr 1e-3, cross-entropy, one random batch reused (data loading excluded
everywhere), training mode (BN batch statistics, Dropout on).
  amptrain     `amptrain bench MODEL --train --json` on PyTorch's training-mode TorchScript export of the
               model (opset 17, BN with batch statistics, do_constant_folding=False);
  ort-training ONNX Runtime on-device training (onnxruntime.training.artifacts: CrossEntropyLoss, AdamW) of
               the same .onnx file (it refuses amptrain's own `models write` export: its BatchNormalization
               gradient builder asks for an output the node does not have);
  torch-eager  PyTorch eager, the same architecture (models/torch/export_models.py SimpleCNN, torchvision
               resnet18);
  torch-compile the same under torch.compile (default mode), compiled during the warm-up steps.
Each (case, runtime) runs --runs times, each in its own process, interleaved so that a change of machine
load hits every runtime; images/s is the median of a run's timed steps, and the table gives the median and
the spread (min-max) of the runs. GFLOP/s counts 3x the forward multiply-adds of Conv and Linear layers
(forward, data gradient, weight gradient) at 2 FLOPs each, against the machine's fp32 FMA peak measured
here by `amptrain bench --fma-peak` (independent FMA chains on --threads threads; the best large sgemm,
torch.mm, is given beside it). Peak RSS is the process's (os.wait4).
Writes the markdown table to --out and the raw rows to build/bench/cpu_training.jsonl.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from amp_training import cpu_description, run_measured  # tools/bench/amp_training.py, beside this script

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CASES = [("simplecnn", 32, 32), ("simplecnn", 128, 32), ("resnet18", 32, 64)]  # (model, batch, image size)
RUNTIMES = ["amptrain", "ort-training", "torch-eager", "torch-compile"]

# The model of a case, prepended to the child scripts: SimpleCNN of models/torch/export_models.py or
# torchvision's resnet18, 10 classes, seeded.
MODEL = r'''
import os, sys, torch, torch.nn as nn
def build_model(model_name, size):
    torch.manual_seed(0)
    if model_name == "simplecnn":
        sys.path.insert(0, os.path.join(os.environ["AMPTRAIN_ROOT"], "models", "torch"))
        from export_models import SimpleCNN
        return SimpleCNN(in_channels=3, image_size=size, num_classes=10)
    import torchvision
    return torchvision.models.resnet18(num_classes=10)
'''

# ONNX Runtime on-device training of an .onnx file (CrossEntropyLoss, AdamW), for the child scripts here and
# in transformer_training.py: ort_trainer(...) returns step(inputs, labels).
ORT_TRAINER = r'''
def ort_trainer(onnx_path, work, tag, frozen=()):
    import os, onnx
    from onnxruntime.training import artifacts, api
    m = onnx.load(onnx_path)
    # ORT's gradient builders read outputs that PyTorch's exports leave out: LayerNormalization's saved
    # mean and inverse std (outputs 1, 2) and Dropout's mask (output 1). Name them, as ORT's own exporter
    # would; the forward values do not change.
    for n in m.graph.node:
        want = {"LayerNormalization": 3, "Dropout": 2}.get(n.op_type, 0)
        while 0 < len(n.output) < want:
            n.output.append("%s_ort_out%d" % (n.name or n.output[0], len(n.output)))
    params = [i.name for i in m.graph.initializer if i.data_type == 1 and i.name not in frozen]
    art = os.path.join(work, "ort_artifacts_%s_%d" % (tag, os.getpid()))
    os.makedirs(art, exist_ok=True)
    artifacts.generate_artifacts(m, requires_grad=params, frozen_params=[], loss=artifacts.LossType.CrossEntropyLoss,
                                 optimizer=artifacts.OptimType.AdamW, artifact_directory=art)
    # The artifacts are written by the venv's newer onnx (IR 11+), which ORT 1.19 refuses to load.
    for f in ("training_model.onnx", "optimizer_model.onnx"):
        a = onnx.load(os.path.join(art, f))
        a.ir_version = min(a.ir_version, 10)
        onnx.save(a, os.path.join(art, f))
    state = api.CheckpointState.load_checkpoint(os.path.join(art, "checkpoint"))
    # Without the eval model: ORT builds it with BN training outputs that its own shape inference refuses.
    module = api.Module(os.path.join(art, "training_model.onnx"), state, None)
    opt = api.Optimizer(os.path.join(art, "optimizer_model.onnx"), module)
    module.train()
    def step(x, y):
        module(x, y)
        opt.step()
        module.lazy_reset_grad()
    return step
'''

# One measurement in a child process: prints {"images_per_s": ..., "steps": [...]} as its last line.
CHILD = r'''
import json, os, sys, time, statistics
runtime, model_name, batch, size, threads, warmup, steps, onnx_path, work = sys.argv[1:10]
batch, size, threads, warmup, steps = int(batch), int(size), int(threads), int(warmup), int(steps)
import torch
torch.set_num_threads(threads)
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
x = torch.randn(batch, 3, size, size, generator=g)
y = torch.randint(0, 10, (batch,), generator=g)
times = []
if runtime == "ort-training":
    import onnx
    m = onnx.load(onnx_path)
    stats = set()
    for n in m.graph.node:
        if n.op_type == "BatchNormalization":
            stats.update(n.input[3:5])
    ort_step = ort_trainer(onnx_path, work, model_name, frozen=stats)
    xn, yn = x.numpy(), y.numpy().astype("int64")
    def step():
        ort_step(xn, yn)
else:
    model = build_model(model_name, size)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    fwd = torch.compile(model) if runtime == "torch-compile" else model
    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(fwd(x), y)
        loss.backward()
        opt.step()
for _ in range(warmup):
    step()
for _ in range(steps):
    t0 = time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
print(json.dumps({"images_per_s": batch / statistics.median(times), "steps": times}))
'''

PEAK = r'''
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
best = 0.0
for _ in range(8):
    t0 = time.perf_counter()
    torch.mm(a, b)
    best = max(best, 2 * 2048 ** 3 / (time.perf_counter() - t0) / 1e9)
print(best)
'''

# The training-mode TorchScript export (BN with batch statistics, Dropout kept) that amptrain and ONNX
# Runtime both train: the export docs/BRING_YOUR_OWN_MODEL.md recommends.
EXPORT = r'''
import warnings
model_name, size, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
model = build_model(model_name, size)
model.train()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.onnx.export(model, (torch.randn(2, 3, size, size),), path, opset_version=17, dynamo=False,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
'''

MACS = r'''
model_name, size = sys.argv[1], int(sys.argv[2])
model = build_model(model_name, size)
macs = [0]
def hook(m, inp, out):
    if isinstance(m, nn.Conv2d):
        macs[0] += out.numel() * m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
    elif isinstance(m, nn.Linear):
        macs[0] += out.numel() * m.in_features
for m in model.modules():
    m.register_forward_hook(hook)
model(torch.randn(1, 3, size, size))
print(macs[0])
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--amptrain", default=os.path.join(ROOT, "build/tools/amptrain"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/benchmarks/cpu_training.md"))
    ap.add_argument("--runtimes", default=",".join(RUNTIMES))
    a = ap.parse_args()
    work = os.path.join(ROOT, "build/bench")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMP_WAIT_POLICY="passive", AMPTRAIN_ROOT=ROOT)
    py = sys.executable
    models = {}
    for model, batch, size in CASES:
        path = os.path.join(work, f"{model}_{size}_torch_train.onnx")
        subprocess.run([py, "-c", MODEL + EXPORT, model, str(size), path], check=True, capture_output=True, env=env)
        models[(model, size)] = path
    fma = json.loads(subprocess.run([a.amptrain, "bench", "--fma-peak", "--threads", str(a.threads), "--json"],
                                    capture_output=True, text=True, env=env, check=True).stdout)["fma_peak_gflops"]
    sgemm = float(subprocess.run([py, "-c", PEAK, str(a.threads)], capture_output=True, text=True, env=env,
                                check=True).stdout.strip())
    macs = {(m, s): int(subprocess.run([py, "-c", MODEL + MACS, m, str(s)], capture_output=True, text=True, env=env,
                                       check=True).stdout.strip()) for m, _, s in CASES}
    runtimes = a.runtimes.split(",")
    rows = []
    t_start = time.time()
    load_start = open("/proc/loadavg").read().split()[:3]
    for model, batch, size in CASES:
        steps = a.steps if model == "simplecnn" else max(5, a.steps // 2)
        for run in range(a.runs):
            for runtime in runtimes:
                if runtime == "amptrain":
                    cmd = [a.amptrain, "bench", models[(model, size)], "--train", "--batch", str(batch), "--threads",
                           str(a.threads), "--warmup", str(a.warmup), "--repeat", str(steps), "--json"]
                else:
                    cmd = [py, "-c", MODEL + ORT_TRAINER + CHILD, runtime, model, str(batch), str(size), str(a.threads),
                           str(a.warmup if runtime != "torch-compile" else a.warmup + 3), str(steps),
                           models[(model, size)], work]
                out, err, rc, rss, _ = run_measured(cmd, env)
                row = {"model": model, "batch": batch, "size": size, "runtime": runtime, "run": run, "rc": rc,
                       "peak_rss_mib": rss}
                if rc == 0:
                    row["images_per_s"] = json.loads(out.strip().splitlines()[-1])["images_per_s"]
                else:
                    row["error"] = (err.strip().splitlines() or ["?"])[-1][:300]
                rows.append(row)
                print(json.dumps(row), flush=True)
    load_end = open("/proc/loadavg").read().split()[:3]
    with open(os.path.join(work, "cpu_training.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")

    cpu, flags, version_lines = cpu_description(a.amptrain)
    version = version_lines[0]
    import torch
    import onnxruntime
    # GOMP_SPINCOUNT from the caller's environment reaches every runtime's OpenMP (amptrain's and PyTorch's).
    spin = f", GOMP_SPINCOUNT={os.environ['GOMP_SPINCOUNT']}" if os.environ.get("GOMP_SPINCOUNT") else ""
    lines = ["# fp32 CPU training: amptrain against ONNX Runtime training and PyTorch", "",
             f"`tools/bench/cpu_training.py --threads {a.threads} --runs {a.runs}` on {time.strftime('%Y-%m-%d')}: "
             f"{cpu}, flags {' '.join(flags)}, {os.cpu_count()} cores, {a.threads} threads, OMP_WAIT_POLICY=passive{spin}; "
             f"{version}, PyTorch {torch.__version__}, onnxruntime-training {onnxruntime.__version__}. "
             f"Measured fp32 FMA peak (`amptrain bench --fma-peak`, independent 512-bit FMA chains, {a.threads} "
             f"threads): {fma:.0f} GFLOP/s; the best 2048^3 sgemm (torch.mm) reached {sgemm:.0f}. "
             f"Load average {' '.join(load_start)} at the start, {' '.join(load_end)} at the end; "
             f"{time.time() - t_start:.0f} s in all.", "",
             "images/s: the median of the runs' medians (min-max over the runs); GFLOP/s at that median; "
             "ratios are amptrain's images/s over the runtime's.", ""]
    for model, batch, size in CASES:
        flops = 6.0 * macs[(model, size)] * batch
        lines += [f"## {model} 3x{size}x{size}, batch {batch} ({flops / batch / 1e9:.2f} GFLOP per image per step)",
                  "", "| runtime | images/s | spread | GFLOP/s | of peak | peak RSS MiB | amptrain vs it |",
                  "|---|---|---|---|---|---|---|"]
        case = [r for r in rows if r["model"] == model and r["batch"] == batch]
        ours = [r["images_per_s"] for r in case if r["runtime"] == "amptrain" and "images_per_s" in r]
        ours_median = statistics.median(ours) if ours else None
        for runtime in runtimes:
            rs = [r for r in case if r["runtime"] == runtime]
            ok = [r["images_per_s"] for r in rs if "images_per_s" in r]
            if not ok:
                lines.append(f"| {runtime} | failed: {rs[0].get('error', '?') if rs else '?'} | | | | | |")
                continue
            med = statistics.median(ok)
            gflops = med * flops / batch / 1e9
            rss = statistics.median(r["peak_rss_mib"] for r in rs if "images_per_s" in r)
            vs = f"{ours_median / med:.2f}x" if ours_median else "-"
            lines.append(f"| {runtime} | {med:.1f} | {min(ok):.1f}-{max(ok):.1f} | {gflops:.1f} | "
                         f"{100 * gflops / fma:.0f}% | {rss:.0f} | {vs} |")
        lines.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
