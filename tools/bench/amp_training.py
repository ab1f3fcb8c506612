#!/usr/bin/env python3
"""Mixed-precision training throughput and peak memory, amptrain against PyTorch and MindSpore, in one run (CPU).

  python3 tools/bench/amp_training.py [--threads 2] [--torch-python .cache/torch-pypi/bin/python]
                                      [--mindspore-python .cache/mindspore/bin/python]
                                      [--amptrain build/tools/amptrain] [--steps 40] [--window 10] [--rounds 1]

Cases: SimpleCNN 3x32x32 at batch 32 and 128, ResNet-18 (CIFAR stem, 32x32) at batch 32 and 128, 10 classes,
synthetic data (1024 samples; PyTorch holds 4 batches), Adam 1e-3, cross-entropy, training mode (BN batch
statistics, Dropout). For each:
  amptrain O0 (fp32), O1 bf16, O1 fp16, O2 bf16, O2 fp16 (fp16 with dynamic loss scaling), O3 bf16;
  PyTorch eager fp32 and torch.autocast("cpu", torch.bfloat16) (PyPI's torch; the same architectures);
  MindSpore (PyPI's mindspore, graph mode; tools/bench/mindspore_train_bench.py, the same architectures)
  fp32 and amp O2 fp16 (O2 bf16 is tried: MindSpore has no bf16 Conv2D on the CPU), when its venv exists.
  MindSpore's bundled oneDNN runs NCHW convolutions through a reference path on AVX-512 CPUs (seconds per
  call), so its runs cap oneDNN to AVX2 (ONEDNN_MAX_CPU_ISA, its fastest setting there) and SimpleCNN is
  also run with its default ISA, fewer steps.
Each run is its own process: images/s is the median of the timed windows (the first --window steps
are warm-up: amptrain plans then; PyTorch's first iterations allocate), peak memory is the process's
peak RSS (os.wait4). Runs alternate between the runtimes so that a change of machine load hits all.
Writes docs/benchmarks/amp_training.md and build/bench/amp_training.jsonl.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# (model, batch, (timed steps, window) or None for --steps/--window; ResNet-18 at batch 128 is there for
# its peak memory, where activations outweigh the fp32 master weights and Adam moments).
CASES = [("simplecnn", 32, None), ("simplecnn", 128, None), ("resnet18", 32, None), ("resnet18", 128, (8, 4))]
# Selected with --cases only (slow: seconds per step): torchvision's ResNet-18 as it is, at 224x224, batch 128,
# where the activations are most of the memory, as in ImageNet training.
EXTRA_CASES = [("resnet18_224", 128, (2, 1))]
# Image side and synthetic data set size per model (the data set is resident, the same at every level).
IMAGE = {"simplecnn": 32, "resnet18": 32, "resnet18_224": 224}
SAMPLES = {"simplecnn": 1024, "resnet18": 1024, "resnet18_224": 144}
AMP_CONFIGS = [("O0 fp32", []), ("O1 bf16", ["--amp", "O1", "--dtype", "bf16"]),
               ("O1 fp16", ["--amp", "O1", "--dtype", "fp16"]),
               ("O2 bf16", ["--amp", "O2", "--dtype", "bf16"]),
               ("O2 fp16", ["--amp", "O2", "--dtype", "fp16"]), ("O3 bf16", ["--amp", "O3", "--dtype", "bf16"])]
TORCH_CONFIGS = ["fp32", "autocast-bf16"]
# MindSpore: (config name, mode for mindspore_train_bench.py, extra environment, models it runs on).
MS_AVX2 = {"ONEDNN_MAX_CPU_ISA": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2"}
MS_CONFIGS = [("fp32", "fp32", MS_AVX2, ("simplecnn", "resnet18")),
              ("fp32, default ISA", "fp32", {}, ("simplecnn",)),
              ("O2 fp16", "O2-fp16", MS_AVX2, ("simplecnn", "resnet18")),
              ("O2 bf16", "O2-bf16", MS_AVX2, ("simplecnn",))]

TORCH_SCRIPT = r'''
import json, statistics, sys, time
import torch, torch.nn as nn, torchvision
model_name, batch, steps, window, threads, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
torch.set_num_threads(threads)
torch.manual_seed(0)
if model_name == "simplecnn":
    sys.path.insert(0, sys.argv[7])
    from export_models import SimpleCNN
    model = SimpleCNN(in_channels=3, image_size=32, num_classes=10)
else:
    model = torchvision.models.resnet18(num_classes=10)
    if model_name == "resnet18":  # the CIFAR stem (32x32 input)
        model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        model.maxpool = nn.Identity()
side = 224 if model_name == "resnet18_224" else 32
model.train()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
g = torch.Generator().manual_seed(0)
xs = [torch.randn(batch, 3, side, side, generator=g) for _ in range(4)]
ys = [torch.randint(0, 10, (batch,), generator=g) for _ in range(4)]
def step(i):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=(mode == "autocast-bf16")):
        out = model(xs[i % 4])
        loss = loss_fn(out.float(), ys[i % 4])
    loss.backward()
    opt.step()
    return loss.item()
for i in range(window):
    step(i)
rates = []
for w in range(steps // window):
    t0 = time.perf_counter()
    for i in range(window):
        step(i)
    rates.append(window * batch / (time.perf_counter() - t0))
print(json.dumps({"windows": rates, "median": statistics.median(rates)}))
'''


def run_measured(cmd, env):
    """(stdout, stderr, exit code, peak RSS in MiB, wall s) of one process; the RSS from os.wait4."""
    t0 = time.time()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        pid = os.fork()
        if pid == 0:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                os.execvpe(cmd[0], cmd, env)
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        out.seek(0)
        err.seek(0)
        return out.read(), err.read(), os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024.0, time.time() - t0


def cpu_description(amptrain):
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
    keep = [f for f in flags if f.startswith(("avx", "amx", "fma", "f16c"))]
    version = subprocess.run([amptrain, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return model, keep, version


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--amptrain", default=os.path.join(ROOT, "build/tools/amptrain"))
    ap.add_argument("--torch-python", default=os.path.join(ROOT, ".cache/torch-pypi/bin/python"))
    ap.add_argument("--mindspore-python", default=os.path.join(ROOT, ".cache/mindspore/bin/python"),
                    help="a Python with PyPI's mindspore; skipped when it does not exist")
    ap.add_argument("--steps", type=int, default=40, help="timed steps (after --window warm-up steps)")
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every configuration this many times, interleaved round by round; images/s is the "
                         "median of all rounds' windows and the table gives the rounds' own medians' range")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/benchmarks/amp_training.md"))
    ap.add_argument("--skip", action="append", default=[], metavar="RUNTIME:CONFIG@MODEL",
                    help="leave out one configuration of one model, e.g. 'pytorch:autocast-bf16@resnet18' (PyTorch's "
                         "bf16 autocast runs ResNet-18 at about 1 image/s on a CPU without AVX512_BF16); the table "
                         "lists it as not run; repeatable")
    ap.add_argument("--cases", default="",
                    help="only these cases, MODEL:BATCH,... (e.g. resnet18:32); default: " +
                         ",".join(f"{m}:{b}" for m, b, _ in CASES) + "; also " +
                         ",".join(f"{m}:{b}" for m, b, _ in EXTRA_CASES))
    a = ap.parse_args()
    skipped = set(a.skip)
    cases = [c for c in CASES + EXTRA_CASES if f"{c[0]}:{c[1]}" in a.cases.split(",")] if a.cases else CASES
    if not cases:
        ap.error(f"--cases {a.cases!r} names none of " + ",".join(f"{m}:{b}" for m, b, _ in CASES + EXTRA_CASES))
    work = os.path.join(ROOT, "build/bench")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    models = {
        "simplecnn": os.path.join(work, "simplecnn_3x32.onnx"),
        "resnet18": os.path.join(work, "resnet18_32.onnx"),
        "resnet18_224": os.path.join(work, "resnet18_224.onnx"),
    }
    subprocess.run([a.amptrain, "models", "write", "simplecnn", "--in-channels", "3", "--image-size", "32",
                    "-o", models["simplecnn"]], check=True, capture_output=True)
    subprocess.run([a.amptrain, "models", "write", "resnet", "--depth", "18", "--small-input", "--image-size", "32",
                    "--num-classes", "10", "-o", models["resnet18"]], check=True, capture_output=True)
    if any(m == "resnet18_224" for m, _, _ in cases):
        subprocess.run([a.amptrain, "models", "write", "resnet", "--depth", "18", "--image-size", "224",
                        "--num-classes", "10", "-o", models["resnet18_224"]], check=True, capture_output=True)
    torch_version = subprocess.run([a.torch_python, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    ms_version = None
    if os.path.exists(a.mindspore_python):
        ms_version = subprocess.run([a.mindspore_python, "-c", "import mindspore; print(mindspore.__version__)"],
                                    capture_output=True, text=True, env=dict(os.environ, GLOG_v="3")).stdout.strip()
    rows = []
    load_start = open("/proc/loadavg").read().split()[:3]
    t_start = time.time()
    for model, batch, sizes in cases:
        steps = a.steps if model == "simplecnn" else max(a.window, a.steps // 2)
        window = a.window
        if sizes:
            steps, window = sizes
        queues = [[("amptrain", name, flags) for name, flags in AMP_CONFIGS],
                  [("pytorch", m, None) for m in TORCH_CONFIGS],
                  [("mindspore", name, (mode, env)) for name, mode, env, on in MS_CONFIGS
                   if ms_version and model in on]]
        # Interleave: amptrain, pytorch, mindspore, amptrain, ...
        order = []
        while any(queues):
            for q in queues:
                if q:
                    order.append(q.pop(0))
        pooled = {}
        for runtime, name, flags in [r for _ in range(a.rounds) for r in order]:
            if f"{runtime}:{name}@{model}" in skipped:
                pooled[(runtime, name)] = {"windows": [], "error": "not run (--skip)"}
                continue
            if runtime == "amptrain":
                metrics = os.path.join(work, "amp_training_metrics.jsonl")
                cmd = [a.amptrain, "train", models[model], "--data", f"synthetic:N={SAMPLES[model]},C=3,H={IMAGE[model]},W={IMAGE[model]},classes=10",
                       "--steps", str(steps + window), "--log-every", str(window), "--batch-size", str(batch),
                       "--threads", str(a.threads), "--metrics", metrics] + flags
                out, err, rc, rss, wall = run_measured(cmd, env)
                if rc != 0:
                    print(f"amptrain {model} b{batch} {name} failed:\n{err}", file=sys.stderr)
                    sys.exit(1)
                w = [r["images_per_s"] for r in map(json.loads, open(metrics)) if r.get("event") == "progress"][1:]
                rate = statistics.median(w)
            elif runtime == "pytorch":
                cmd = [a.torch_python, "-c", TORCH_SCRIPT, model, str(batch), str(steps), str(window),
                       str(a.threads), name, os.path.join(ROOT, "models/torch")]
                out, err, rc, rss, wall = run_measured(cmd, env)
                if rc != 0:
                    print(f"pytorch {model} b{batch} {name} failed:\n{err}", file=sys.stderr)
                    sys.exit(1)
                r = json.loads(out.strip().splitlines()[-1])
                w, rate = r["windows"], r["median"]
            else:
                mode, extra = flags
                # Graph compilation takes the warm-up window; the default ISA's reference convolutions take
                # seconds each, so that configuration runs a few steps.
                ms_steps, ms_window = (steps, window) if extra else (4, 2)
                cmd = [a.mindspore_python, os.path.join(ROOT, "tools/bench/mindspore_train_bench.py"), model,
                       str(batch), str(ms_steps), str(ms_window), str(a.threads), mode]
                out, err, rc, rss, wall = run_measured(cmd, dict(env, GLOG_v="3", **extra))
                if rc != 0:
                    # MindSpore's message follows a bare "TypeError:" line.
                    lines = [l.strip() for l in err.splitlines() if l.strip() and not l.startswith("[WARNING]")]
                    reason = next((l for key in ("Unsupported", "fail", "Error") for l in lines if key in l
                                   and not l.endswith("Error:")), f"exit {rc}")
                    print(json.dumps({"model": model, "batch": batch, "runtime": runtime, "config": name,
                                      "error": reason}), flush=True)
                    pooled.setdefault((runtime, name), {"windows": [], "medians": [], "rss": [], "wall": 0.0,
                                                        "error": reason})
                    continue
                r = json.loads(out.strip().splitlines()[-1])
                w, rate = r["windows"], r["median"]
            print(json.dumps({"model": model, "batch": batch, "runtime": runtime, "config": name,
                              "images_per_s": rate, "windows": w, "peak_rss_mib": rss, "wall_s": wall}), flush=True)
            p = pooled.setdefault((runtime, name), {"windows": [], "medians": [], "rss": [], "wall": 0.0})
            p["windows"] += w
            p["medians"].append(rate)
            p["rss"].append(rss)
            p["wall"] += wall
        for runtime, name, _ in order:
            p = pooled[(runtime, name)]
            if not p["windows"]:
                rows.append({"model": model, "batch": batch, "runtime": runtime, "config": name, "error": p["error"]})
                continue
            rows.append({"model": model, "batch": batch, "runtime": runtime, "config": name,
                         "images_per_s": statistics.median(p["windows"]), "round_medians": p["medians"],
                         "windows": p["windows"], "peak_rss_mib": max(p["rss"]), "wall_s": p["wall"]})
    load_end = open("/proc/loadavg").read().split()[:3]
    with open(os.path.join(work, "amp_training.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")

    cpu, flags, version = cpu_description(a.amptrain)
    # GOMP_SPINCOUNT from the caller's environment reaches every runtime's OpenMP (amptrain's and PyTorch's).
    spin = f", GOMP_SPINCOUNT={os.environ['GOMP_SPINCOUNT']}" if os.environ.get("GOMP_SPINCOUNT") else ""
    lines = ["# Mixed-precision training: amptrain against PyTorch and MindSpore (CPU)", "",
             f"`python3 tools/bench/amp_training.py --threads {a.threads}"
             f"{f' --rounds {a.rounds}' if a.rounds != 1 else ''}"
             f"{f' --steps {a.steps}' if a.steps != 40 else ''}{f' --window {a.window}' if a.window != 10 else ''}"
             f"{''.join(f' --skip {k}' for k in a.skip)}{f' --cases {a.cases}' if a.cases else ''}` on {time.strftime('%Y-%m-%d')}: "
             f"{cpu}, flags {' '.join(flags)}, {os.cpu_count()} cores, {a.threads} threads, "
             f"OMP_WAIT_POLICY=passive{spin}. PyTorch {torch_version} from PyPI. "
             f"{f'MindSpore {ms_version} from PyPI (graph mode; fp16 without loss scaling, which needs an Ascend op there; oneDNN capped to AVX2 unless the config says default ISA). ' if ms_version else 'MindSpore: not installed (no venv at --mindspore-python). '}"
             f"Synthetic data, Adam 1e-3, training mode. "
             f"Load average {' '.join(load_start)} at the start, {' '.join(load_end)} at the end; "
             f"{time.time() - t_start:.0f} s in all.", "",
             "amptrain --version:", "", "```"] + version + ["```", "",
             f"Images/s is the median of the timed windows ({a.rounds} interleaved round(s) per configuration; "
             "'rounds' gives the range of each round's own median); peak memory is the process's peak RSS "
             "(libraries included: PyTorch's own footprint is larger before any tensor). "
             "Ratios are to amptrain O0 of the same case.", ""]
    for model, batch, _ in cases:
        case = [r for r in rows if r["model"] == model and r["batch"] == batch]
        base = next(r for r in case if r["runtime"] == "amptrain" and r["config"] == "O0 fp32")
        lines += [f"## {model}, batch {batch}", "",
                  "| runtime | precision | images/s | rounds | vs amptrain O0 | peak RSS MiB | vs amptrain O0 |",
                  "|---|---|---|---|---|---|---|"]
        for r in case:
            if "error" in r:
                what = r["error"] if r["error"].startswith("not run") else f"fails: `{r['error'][:100]}`"
                lines.append(f"| {r['runtime']} | {r['config']} | {what} | | | | |")
                continue
            spread = f"{min(r['round_medians']):.0f}-{max(r['round_medians']):.0f}"
            lines.append(f"| {r['runtime']} | {r['config']} | {r['images_per_s']:.1f} | {spread} | "
                         f"{r['images_per_s'] / base['images_per_s']:.2f}x | {r['peak_rss_mib']:.0f} | "
                         f"{r['peak_rss_mib'] / base['peak_rss_mib']:.2f}x |")
        lines.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
