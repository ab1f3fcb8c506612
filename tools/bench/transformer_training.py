#!/usr/bin/env python3
"""Transformer training throughput on the CPU: amptrain (fp32 and AMP) against PyTorch and ONNX Runtime training.

  .cache/torch-pypi/bin/python tools/bench/transformer_training.py [--threads 2] [--runs 3]
      [--batch 32] [--seq 128] [--amptrain build/tools/amptrain] [--out docs/benchmarks/transformer_training.md]
      [--task classify|lm] [--vocab 8192]

The model: a token-id classifier, nn.Embedding (vocab 1000) + a learned position table, an
nn.TransformerEncoder (d_model 256, 4 heads, feed-forward 1024, GELU, 4 layers, dropout 0.1), LayerNorm,
mean over the sequence, nn.Linear to 10 classes. Batch --batch x --seq token ids uniform in [0, 10) (what
`amptrain bench` draws for integer inputs), labels uniform over the classes, one batch reused (no data
loading anywhere), Adam(W) lr 1e-3, cross-entropy, training mode.
--task lm: the same encoder as a GPT-style language model instead: a causal attention mask, no mean, the
head nn.Linear(256, --vocab) on every token (logits [batch, seq, vocab]), labels uniform over the vocabulary
per token, cross-entropy over all batch x seq tokens (default --out docs/benchmarks/lm_training.md).
  amptrain        `amptrain bench MODEL --train --json [--amp LEVEL --dtype T]` on PyTorch's training-mode
                  TorchScript export (opset 17, do_constant_folding=False: docs/BRING_YOUR_OWN_MODEL.md);
  ort-training    ONNX Runtime on-device training (CrossEntropyLoss, AdamW) of the same .onnx file, fp32, with
                  the outputs its gradient builders need named (cpu_training.py's ORT_TRAINER);
  torch           PyTorch eager fp32, `torch.autocast("cpu", torch.bfloat16)`, and torch.compile fp32 (compiled
                  during the warm-up steps).
Every (config, run) is its own process, interleaved so that a change of machine load hits every runtime;
sequences/s is the median of a run's timed steps, the table gives the median and the spread (min-max) of the
runs. Peak RSS is the process's (os.wait4). Writes the markdown table to --out and the raw rows to
build/bench/transformer_training.jsonl.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from amp_training import cpu_description, run_measured  # tools/bench/amp_training.py, beside this script
from cpu_training import ORT_TRAINER  # tools/bench/cpu_training.py

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

AMPTRAIN_CONFIGS = [("O0 fp32", []), ("O1 bf16", ["--amp", "O1", "--dtype", "bf16"]),
                    ("O2 bf16", ["--amp", "O2", "--dtype", "bf16"]), ("O1 fp16", ["--amp", "O1", "--dtype", "fp16"])]
OTHER_CONFIGS = [("torch", "fp32"), ("torch", "autocast-bf16"), ("torch-compile", "fp32"), ("ort-training", "fp32")]

MODEL = r'''
import sys, torch, torch.nn as nn
class Classifier(nn.Module):
    def __init__(self, seq, vocab=1000, d=256, heads=4, ff=1024, layers=4, classes=10):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, batch_first=True, activation="gelu")
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)
    def forward(self, ids):
        return self.head(self.norm(self.enc(self.emb(ids) + self.pos)).mean(1))
class LanguageModel(Classifier):
    def __init__(self, seq, vocab):
        super().__init__(seq, vocab=vocab, classes=vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1), persistent=False)
    def forward(self, ids):
        return self.head(self.norm(self.enc(self.emb(ids) + self.pos, mask=self.mask)))
def build_model(seq, task="classify", vocab=1000):
    torch.manual_seed(0)
    return LanguageModel(seq, vocab) if task == "lm" else Classifier(seq)
'''

EXPORT = r'''
import warnings
seq, path, task, vocab = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
m = build_model(seq, task, vocab)
m.train()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.onnx.export(m, (torch.randint(0, 10, (2, seq)),), path, opset_version=17, dynamo=False,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["ids"], output_names=["logits"],
                      dynamic_axes={"ids": {0: "batch"}, "logits": {0: "batch"}})
'''

# One measurement in a child process: prints {"images_per_s": ..., "steps": [...]} as its last line.
CHILD = r'''
import json, os, statistics, time
runtime, precision, batch, seq, threads, warmup, steps, onnx_path, work, task, vocab = sys.argv[1:12]
batch, seq, threads, warmup, steps, vocab = int(batch), int(seq), int(threads), int(warmup), int(steps), int(vocab)
torch.set_num_threads(threads)
g = torch.Generator().manual_seed(0)
ids = torch.randint(0, 10, (batch, seq), generator=g)
y = torch.randint(0, vocab, (batch, seq), generator=g) if task == "lm" else torch.randint(0, 10, (batch,), generator=g)
if runtime == "ort-training":
    if task == "lm":
        # ORT's CrossEntropyLoss block feeds the logits to SoftmaxCrossEntropyLoss, which reads the classes on
        # axis 1, but shapes the labels as the logits less their last dim (onnxblock/loss/loss.py): on
        # [batch, seq, vocab] logits it fails. So the logits go through a Transpose to [batch, vocab, seq],
        # declared with symbolic dims so that the labels input comes out [d0, d1] and takes [batch, seq].
        import onnx
        from onnx import helper
        m = onnx.load(onnx_path)
        out = m.graph.output[0]
        m.graph.node.append(helper.make_node("Transpose", [out.name], ["logits_bvs"], perm=[0, 2, 1]))
        m.graph.output.remove(out)
        m.graph.output.append(helper.make_tensor_value_info("logits_bvs", onnx.TensorProto.FLOAT, ["d0", "d1", "d2"]))
        onnx_path = os.path.join(work, "lm_classes_first_%d.onnx" % os.getpid())
        onnx.save(m, onnx_path)
    ort_step = ort_trainer(onnx_path, work, "transformer")
    idn, yn = ids.numpy().astype("int64"), y.numpy().astype("int64")
    def step():
        ort_step(idn, yn)
else:
    model = build_model(seq, task, vocab)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    fwd = torch.compile(model) if runtime == "torch-compile" else model
    low = precision == "autocast-bf16"
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", torch.bfloat16, enabled=low):
            out = fwd(ids)
        loss_fn(out.float().reshape(-1, out.shape[-1]), y.reshape(-1)).backward()
        opt.step()
for _ in range(warmup):
    step()
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
print(json.dumps({"images_per_s": batch / statistics.median(times), "steps": times}))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--amptrain", default=os.path.join(ROOT, "build/tools/amptrain"))
    ap.add_argument("--out", default=None, help="default docs/benchmarks/transformer_training.md, "
                    "lm_training.md with --task lm")
    ap.add_argument("--task", choices=["classify", "lm"], default="classify")
    ap.add_argument("--vocab", type=int, default=8192, help="--task lm: the vocabulary (the head's width)")
    ap.add_argument("--skip", default="", help="comma-separated runtimes to leave out (e.g. torch-compile)")
    a = ap.parse_args()
    lm = a.task == "lm"
    a.out = a.out or os.path.join(ROOT, "docs/benchmarks", "lm_training.md" if lm else "transformer_training.md")
    vocab = a.vocab if lm else 1000
    work = os.path.join(ROOT, "build/bench")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    py = sys.executable
    model = os.path.join(work, f"transformer_{a.task}_s{a.seq}_v{vocab}_torch_train.onnx")
    subprocess.run([py, "-c", MODEL + EXPORT, str(a.seq), model, a.task, str(vocab)], check=True, capture_output=True,
                   env=env)
    skip = set(filter(None, a.skip.split(",")))
    configs = [("amptrain", name, flags) for name, flags in AMPTRAIN_CONFIGS]
    configs += [(rt, prec, None) for rt, prec in OTHER_CONFIGS if rt not in skip]
    rows = []
    t_start = time.time()
    load_start = open("/proc/loadavg").read().split()[:3]
    for run in range(a.runs):
        for runtime, precision, flags in configs:
            if runtime == "amptrain":
                cmd = [a.amptrain, "bench", model, "--train", "--batch", str(a.batch), "--threads", str(a.threads),
                       "--warmup", str(a.warmup), "--repeat", str(a.steps), "--json"] + flags
            else:
                warmup = a.warmup + 3 if runtime == "torch-compile" else a.warmup
                cmd = [py, "-c", MODEL + ORT_TRAINER + CHILD, runtime, precision, str(a.batch),
                       str(a.seq), str(a.threads), str(warmup), str(a.steps), model, work, a.task, str(vocab)]
            out, err, rc, rss, wall = run_measured(cmd, env)
            row = {"runtime": runtime, "precision": precision, "run": run, "rc": rc, "peak_rss_mib": rss, "wall_s": wall}
            if rc == 0:
                row["seq_per_s"] = json.loads(out.strip().splitlines()[-1])["images_per_s"]
            else:
                row["error"] = (err.strip().splitlines() or ["?"])[-1][:300]
            rows.append(row)
            print(json.dumps(row), flush=True)
    load_end = open("/proc/loadavg").read().split()[:3]
    with open(os.path.join(work, f"transformer_training_{a.task}.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")

    cpu, flags, version_lines = cpu_description(a.amptrain)
    import torch
    import onnxruntime
    base = statistics.median(r["seq_per_s"] for r in rows if r["runtime"] == "amptrain" and r["precision"] == "O0 fp32"
                             and "seq_per_s" in r)
    title = "A transformer language model" if lm else "Transformer"
    lines = [f"# {title} training on the CPU: amptrain against PyTorch and ONNX Runtime training", "",
             f"`tools/bench/transformer_training.py --threads {a.threads} --runs {a.runs} --batch {a.batch} "
             f"--seq {a.seq}{f' --task lm --vocab {vocab}' if lm else ''}` on {time.strftime('%Y-%m-%d')}: {cpu}, flags {' '.join(flags)}, {os.cpu_count()} cores, "
             f"{a.threads} threads, OMP_WAIT_POLICY=passive; {version_lines[0]}, PyTorch {torch.__version__}, "
             f"onnxruntime-training {onnxruntime.__version__}. Load average {' '.join(load_start)} at the start, "
             f"{' '.join(load_end)} at the end; {time.time() - t_start:.0f} s in all.", "",
             (f"The model: token ids -> nn.Embedding ({vocab}) + positions -> nn.TransformerEncoder (d_model 256, "
              "4 heads, feed-forward 1024, GELU, 4 layers, dropout 0.1, causal mask) -> LayerNorm -> Linear "
              f"({vocab}) on every token: logits [batch, seq, {vocab}], a label per token (cross-entropy over "
              "the batch's tokens); " if lm else
              "The model: token ids -> nn.Embedding (1000) + positions -> nn.TransformerEncoder (d_model 256, 4 heads, "
              "feed-forward 1024, GELU, 4 layers, dropout 0.1) -> LayerNorm -> mean -> Linear (10); ") +
             f"Adam(W) lr 1e-3, batch {a.batch} x {a.seq} tokens, one batch reused. sequences/s: the median of the "
             "runs' medians (min-max over the runs); the last column is amptrain O0's rate over the row's.", "",
             "| runtime | precision | sequences/s | spread | peak RSS MiB | amptrain O0 vs it |",
             "|---|---|---|---|---|---|"]
    for runtime, precision, _ in configs:
        rs = [r for r in rows if r["runtime"] == runtime and r["precision"] == precision]
        ok = [r["seq_per_s"] for r in rs if "seq_per_s" in r]
        if not ok:
            lines.append(f"| {runtime} | {precision} | failed: {rs[0].get('error', '?') if rs else '?'} | | | |")
            continue
        med = statistics.median(ok)
        rss = statistics.median(r["peak_rss_mib"] for r in rs if "seq_per_s" in r)
        lines.append(f"| {runtime} | {precision} | {med:.1f} | {min(ok):.1f}-{max(ok):.1f} | {rss:.0f} | "
                     f"{base / med:.2f}x |")
    lines.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
