#!/usr/bin/env python3
"""Training steps of small models of other families than image classifiers, amptrain against PyTorch eager.

  .cache/torch-pypi/bin/python tools/bench/model_families.py [--threads 2] [--rounds 2] [--out FILE.md]

Each model is a few layers of one family, exported by TorchScript in training mode
(do_constant_folding=False); one step = forward, cross-entropy over 10 classes, backward, Adam (lr 1e-3):
  audio:  Conv1d x3 (stride 2, groups 2, dilation 2) + BatchNorm1d + ReLU, 16 x 1 x 8000 samples
  unet:   Conv2d + GroupNorm + SiLU, a strided Conv2d, ConvTranspose2d (k4 s2), InstanceNorm2d, bilinear
          Upsample, a skip connection; 8 x 3 x 64 x 64
  video:  Conv3d x2 + BatchNorm3d + ReLU + MaxPool3d; 4 x 3 x 8 x 32 x 32
  attn:   token embedding, LayerNorm, causal scaled_dot_product_attention (4 heads), mean; 16 x 128 tokens
amptrain: `amptrain bench --train` (the step's median); PyTorch: the same module and batch, eager, median of
timed steps after warm-up. The runs alternate for --rounds rounds, under OMP_WAIT_POLICY=passive.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

TORCH = r"""
import json, statistics, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
name, threads, mode, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
torch.manual_seed(0)
torch.set_num_threads(threads)
class UNetish(nn.Module):
    def __init__(s):
        super().__init__()
        s.d1 = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.GroupNorm(8, 32), nn.SiLU())
        s.d2 = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.GroupNorm(8, 64), nn.SiLU())
        s.u1 = nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1)
        s.n = nn.InstanceNorm2d(32, affine=True)
        s.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        s.out = nn.Conv2d(32, 10, 1)
    def forward(s, x):
        a = s.d1(x); b = s.d2(a); c = F.relu(s.n(s.u1(b))) + a
        return s.out(F.avg_pool2d(s.up(c), 4)).mean((2, 3))
class Audio(nn.Module):
    def __init__(s):
        super().__init__()
        s.c = nn.Sequential(nn.Conv1d(1, 32, 9, stride=2, padding=4), nn.BatchNorm1d(32), nn.ReLU(),
                            nn.Conv1d(32, 64, 9, stride=2, padding=4, groups=2), nn.BatchNorm1d(64), nn.ReLU(),
                            nn.Conv1d(64, 64, 9, padding=8, dilation=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1))
        s.fc = nn.Linear(64, 10)
    def forward(s, x): return s.fc(s.c(x).flatten(1))
class Video(nn.Module):
    def __init__(s):
        super().__init__()
        s.c = nn.Sequential(nn.Conv3d(3, 16, 3, padding=1), nn.BatchNorm3d(16), nn.ReLU(), nn.MaxPool3d(2),
                            nn.Conv3d(16, 32, 3, padding=1), nn.BatchNorm3d(32), nn.ReLU(), nn.AdaptiveAvgPool3d(1))
        s.fc = nn.Linear(32, 10)
    def forward(s, x): return s.fc(s.c(x).flatten(1))
class Attn(nn.Module):
    def __init__(s):
        super().__init__()
        s.emb = nn.Embedding(1000, 128); s.qkv = nn.Linear(128, 384); s.o = nn.Linear(128, 128)
        s.ln = nn.LayerNorm(128); s.fc = nn.Linear(128, 10)
    def forward(s, x):
        h = s.emb(x); B, T, C = h.shape
        q, k, v = s.qkv(s.ln(h)).view(B, T, 3, 4, 32).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        return s.fc((h + s.o(a)).mean(1))
m, x = {"unet": (UNetish, lambda: torch.randn(8, 3, 64, 64)), "audio": (Audio, lambda: torch.randn(16, 1, 8000)),
        "video": (Video, lambda: torch.randn(4, 3, 8, 32, 32)),
        "attn": (Attn, lambda: torch.randint(0, 1000, (16, 128)))}[name]
m, x = m().train(), x()
if mode == "export":
    torch.onnx.export(m, (x,), path, dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "b"}, "logits": {0: "b"}})
    print(json.dumps({"batch": x.shape[0]}))
    sys.exit(0)
y = torch.randint(0, 10, (x.shape[0],))
opt = torch.optim.Adam(m.parameters(), 1e-3)
def step():
    opt.zero_grad(); F.cross_entropy(m(x), y).backward(); opt.step()
for _ in range(3): step()
ts = []
for _ in range(8):
    t = time.perf_counter(); step(); ts.append((time.perf_counter() - t) * 1000)
print(json.dumps({"median_ms": statistics.median(ts)}))
"""

MODELS = ["audio", "unet", "video", "attn"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--amptrain", default=os.path.join(ROOT, "build", "tools", "amptrain"))
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "model_families.md"))
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    batch, path = {}, {}
    for name in MODELS:
        path[name] = os.path.join(a.work, f"family_{name}_train.onnx")
        out = subprocess.run([sys.executable, "-c", TORCH, name, str(a.threads), "export", path[name]],
                             check=True, capture_output=True, text=True)
        batch[name] = json.loads(out.stdout.strip().splitlines()[-1])["batch"]
    results = {}
    t0 = time.time()
    for _ in range(a.rounds):
        for name in MODELS:
            out = subprocess.run([a.amptrain, "bench", path[name], "--train", "--batch", str(batch[name]), "--threads",
                                  str(a.threads), "--warmup", "3", "--repeat", "8", "--json"],
                                 env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"amptrain {name} failed:\n{out.stderr}")
            results.setdefault((name, "amptrain"), []).append(json.loads(out.stdout.strip().splitlines()[-1])["median_ms"])
            out = subprocess.run([sys.executable, "-c", TORCH, name, str(a.threads), "train", ""], env=env,
                                 capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"pytorch {name} failed:\n{out.stderr}")
            results.setdefault((name, "pytorch"), []).append(json.loads(out.stdout.strip().splitlines()[-1])["median_ms"])
    import torch
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    lines = ["# Training steps of other model families: amptrain against PyTorch eager", "",
             f"`tools/bench/model_families.py --threads {a.threads} --rounds {a.rounds}` on {time.strftime('%Y-%m-%d')}: "
             f"{cpu}, {os.cpu_count()} cores, {a.threads} threads, OMP_WAIT_POLICY=passive; PyTorch {torch.__version__}; "
             f"{time.time() - t0:.0f} s in all.", "", __doc__.split("\n\n")[2], "",
             "| model | batch | amptrain step ms | PyTorch step ms | rounds (amptrain / PyTorch) | amptrain's speed vs PyTorch |",
             "|---|---|---|---|---|---|"]
    for name in MODELS:
        ours, theirs = results[(name, "amptrain")], results[(name, "pytorch")]
        lines.append(f"| {name} | {batch[name]} | {statistics.median(ours):.1f} | {statistics.median(theirs):.1f} | "
                     f"{' '.join(f'{v:.0f}' for v in ours)} / {' '.join(f'{v:.0f}' for v in theirs)} | "
                     f"{statistics.median(theirs) / statistics.median(ours):.2f}x |")
    lines.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
