#!/usr/bin/env python3
"""Recurrent-model training on the CPU: amptrain against PyTorch eager, side by side.

  .cache/torch-pypi/bin/python tools/bench/recurrent_training.py [--threads 2] [--rounds 2] [--out FILE.md]

Models (token ids -> nn.Embedding(1000, 128) -> recurrent layers -> last step -> Linear(10)):
  lstm: nn.LSTM(128, 256, num_layers=2, batch_first=True)
  gru:  nn.GRU(128, 256, bidirectional=True, batch_first=True)
exported by TorchScript in training mode (do_constant_folding=False), batch 32 x 64 tokens. One
training step = forward, cross-entropy, backward, Adam (lr 1e-3). amptrain: `amptrain bench --train`
(fp32 and --amp O2 --dtype bf16, the step's median); PyTorch: the same module and batch, eager, fp32
and torch.autocast("cpu", torch.bfloat16), median of timed steps after warm-up. The runs alternate
(amptrain, PyTorch, ...) for --rounds rounds under OMP_WAIT_POLICY=passive (and, as a second table,
without it: OpenMP threads spin between parallel regions).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

TORCH_STEP = r"""
import json, statistics, sys, time
import torch, torch.nn as nn
name, batch, seq, threads, mode, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
torch.manual_seed(0)
torch.set_num_threads(threads)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 128)
        self.rnn = nn.LSTM(128, 256, num_layers=2, batch_first=True) if name == "lstm" else \
            nn.GRU(128, 256, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(256 if name == "lstm" else 512, 10)
    def forward(self, x):
        y, _ = self.rnn(self.emb(x))
        return self.fc(y[:, -1])
m = Net().train()
x = torch.randint(0, 1000, (batch, seq))
if mode == "export":
    torch.onnx.export(m, (x,), path, dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    sys.exit(0)
y = torch.randint(0, 10, (batch,))
opt = torch.optim.Adam(m.parameters(), 1e-3)
def step():
    opt.zero_grad()
    with torch.autocast("cpu", torch.bfloat16, enabled=mode == "autocast-bf16"):
        loss = nn.functional.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
for _ in range(3):
    step()
ts = []
for _ in range(10):
    t = time.perf_counter(); step(); ts.append((time.perf_counter() - t) * 1000)
print(json.dumps({"median_ms": statistics.median(ts)}))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--amptrain", default=os.path.join(ROOT, "build", "tools", "amptrain"))
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "recurrent_training.md"))
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    models = {}
    for name in ("lstm", "gru"):
        models[name] = os.path.join(a.work, f"{name}_classifier_train.onnx")
        subprocess.run([sys.executable, "-c", TORCH_STEP, name, str(a.batch), str(a.seq), str(a.threads), "export",
                        models[name]], check=True, capture_output=True)
    configs = [("amptrain", "fp32", []), ("pytorch", "fp32", None), ("amptrain", "O2 bf16", ["--amp", "O2", "--dtype", "bf16"]),
               ("pytorch", "autocast-bf16", None)]
    tables = {}
    t0 = time.time()
    for policy in ("passive", "default"):
        env = dict(os.environ)
        env.pop("OMP_WAIT_POLICY", None)
        if policy == "passive":
            env["OMP_WAIT_POLICY"] = "passive"
        results = {}
        for _ in range(a.rounds):
            for name in models:
                for runtime, label, flags in configs:
                    if runtime == "amptrain":
                        out = subprocess.run([a.amptrain, "bench", models[name], "--train", "--batch", str(a.batch),
                                              "--threads", str(a.threads), "--warmup", "3", "--repeat", "10", "--json"]
                                             + flags, env=env, capture_output=True, text=True)
                        if out.returncode != 0:
                            sys.exit(f"amptrain {name} {label} failed:\n{out.stderr}")
                        ms = json.loads(out.stdout.strip().splitlines()[-1])["median_ms"]
                    else:
                        out = subprocess.run([sys.executable, "-c", TORCH_STEP, name, str(a.batch), str(a.seq),
                                              str(a.threads), label, ""], env=env, capture_output=True, text=True)
                        if out.returncode != 0:
                            sys.exit(f"pytorch {name} {label} failed:\n{out.stderr}")
                        ms = json.loads(out.stdout.strip().splitlines()[-1])["median_ms"]
                    results.setdefault((name, runtime, label), []).append(ms)
        tables[policy] = results
    import torch
    lines = ["# Recurrent-model training on the CPU: amptrain against PyTorch", "",
             f"`tools/bench/recurrent_training.py --threads {a.threads} --rounds {a.rounds}` on "
             f"{time.strftime('%Y-%m-%d')}: {cpu_model()}, {os.cpu_count()} cores, {a.threads} threads; "
             f"PyTorch {torch.__version__}; {time.time() - t0:.0f} s in all.", "", __doc__.split("\n\n")[2].replace("\n", " "),
             ""]
    for policy, results in tables.items():
        lines += [f"## OMP_WAIT_POLICY={'passive' if policy == 'passive' else '(unset)'}", "",
                  "| model | runtime | precision | step ms (median of rounds) | rounds | amptrain fp32 vs it |",
                  "|---|---|---|---|---|---|"]
        for name in models:
            ours = statistics.median(results[(name, "amptrain", "fp32")])
            for runtime, label, _ in configs:
                r = results[(name, runtime, label)]
                lines.append(f"| {name} | {runtime} | {label} | {statistics.median(r):.1f} | "
                             f"{' / '.join(f'{v:.1f}' for v in r)} | {statistics.median(r) / ours:.2f}x |")
        lines.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


if __name__ == "__main__":
    main()
