#!/usr/bin/env python3
"""Hugging Face causal language models (GPT-2, Llama; tiny random-init configs) trained by amptrain on text.

    P=.cache/torch-pypi/bin/python   # PyPI torch; `$P -m pip install transformers` once (not a project dependency)
    $P tools/bench/hf_causal_lm.py [--models gpt2,llama] [--epochs 2] [--amptrain build/tools/amptrain]
        [--out build/hf_lm] [--doc docs/hf_causal_lm_run.md]

The text: the license files of this Debian machine (/usr/share/common-licenses), bytes as token ids
(vocabulary 256), cut into rows of 64 tokens; the last 10% of the rows are the test split. The label of
each token is the next one (-100, ignored, at a row's last token). Each model's *ForCausalLM with
use_cache=False, exported by dynamo with optimize=False in training mode (Dropout 0), logits
[batch, 64, 256].
  - gradients: `amptrain grad` (a label per token, a fifth of them -100) against a float64 PyTorch
    reference of F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1)); each parameter within 10x
    PyTorch float32's own error or 1e-4 relative;
  - training: `amptrain train` on the rows (Adam lr 1e-3, batch 32, --epochs, fp32 and AMP O2 bf16), and
    PyTorch eager training the same initial model for as many steps with the same optimizer and batch
    (its own shuffle: the orders differ); the table gives each run's test loss (nats per token), token
    accuracy and time.
Prints a markdown table and writes it to --doc.
"""
import argparse
import copy
import glob
import json
import os
import subprocess
import time

import numpy as np
import torch
import torch.nn.functional as F
import transformers as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEQ, VOCAB, BATCH = 64, 256, 32
MODELS = {
    "gpt2": ("GPT2LMHeadModel", "GPT2Config",
             dict(vocab_size=VOCAB, n_embd=128, n_layer=2, n_head=4, n_positions=SEQ, resid_pdrop=0.0,
                  embd_pdrop=0.0, attn_pdrop=0.0)),
    "llama": ("LlamaForCausalLM", "LlamaConfig",
              dict(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=SEQ)),
}


class Logits(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        return self.m(input_ids=ids, use_cache=False).logits


def text_rows():
    data = b"".join(open(f, "rb").read() for f in sorted(glob.glob("/usr/share/common-licenses/*"))
                    if os.path.isfile(f))
    ids = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    n = (len(ids) - 1) // SEQ
    x = ids[:n * SEQ].reshape(n, SEQ)
    y = ids[1:n * SEQ + 1].reshape(n, SEQ).copy()
    y[:, -1] = -100  # the row's last token: its next one is in another row
    cut = n - n // 10
    return x[:cut], y[:cut], x[cut:], y[cut:]


def torch_train(m, x, y, xt, yt, steps, seed=0):
    m = copy.deepcopy(m).train()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed)
    X, Y = torch.from_numpy(x), torch.from_numpy(y)
    t0, step = time.time(), 0
    while step < steps:
        for idx in torch.randperm(len(X), generator=g).split(BATCH):
            if step == steps:
                break
            logits = Logits(m)(X[idx])
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), Y[idx].reshape(-1), ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
    took = time.time() - t0
    m.eval()
    with torch.no_grad():
        logits = Logits(m)(torch.from_numpy(xt))
        test = F.cross_entropy(logits.reshape(-1, VOCAB), torch.from_numpy(yt).reshape(-1), ignore_index=-100)
        keep = torch.from_numpy(yt).reshape(-1) != -100
        acc = (logits.reshape(-1, VOCAB).argmax(1) == torch.from_numpy(yt).reshape(-1))[keep].float().mean()
    return float(test), float(acc), took


def grad_check(amptrain, m, d, x):
    mt = copy.deepcopy(m).train()
    ids = torch.from_numpy(x[:4])
    torch.onnx.export(Logits(mt), (ids,), f"{d}/grad.onnx", dynamo=True, optimize=False, input_names=["ids"],
                      dynamic_shapes={"ids": {0: torch.export.Dim("batch", min=1, max=4096)}})
    g = torch.Generator().manual_seed(1)
    y = torch.randint(0, VOCAB, (4, SEQ), generator=g)
    y[torch.rand(4, SEQ, generator=g) < 0.2] = -100

    def grads(dtype):
        mm = copy.deepcopy(mt).to(dtype)
        loss = F.cross_entropy(Logits(mm)(ids).reshape(-1, VOCAB), y.reshape(-1), ignore_index=-100)
        loss.backward()
        return {k: p.grad.double().numpy() for k, p in mm.named_parameters() if p.grad is not None}

    g64, g32 = grads(torch.float64), grads(torch.float32)
    # Tied weights (GPT-2's wte and lm_head) are one initializer in the export, under either name.
    aliases = {}
    for k, p in mt.named_parameters(remove_duplicate=False):
        aliases.setdefault(id(p), []).append(k)
    names = {k: aliases[id(p)] for k, p in mt.named_parameters()}
    np.save(f"{d}/grad_ids.npy", ids.numpy())
    np.save(f"{d}/grad_y.npy", y.numpy())
    p = subprocess.run([amptrain, "grad", f"{d}/grad.onnx", "--input", f"ids={d}/grad_ids.npy", "--labels", f"{d}/grad_y.npy",
                        "--output-dir", f"{d}/grads_out"], capture_output=True, text=True)
    if p.returncode:
        return "**fail** " + p.stderr.strip().splitlines()[-1][:150]
    bad, worst, missing = 0, 0.0, []
    for k, ref in g64.items():
        found = [f for f in (f"{d}/grads_out/grads/m.{n}.npy" for n in names[k]) if os.path.exists(f)]
        if not found:
            missing.append(k)
            continue
        f = found[0]
        den = max(np.linalg.norm(ref), 1e-12)
        e = np.linalg.norm(np.load(f).astype(np.float64) - ref) / den
        bound = max(10 * np.linalg.norm(g32[k] - ref) / den, 1e-4)
        worst = max(worst, e / bound)
        bad += e > bound
    ok = bad == 0 and not missing
    return (f"{'ok' if ok else '**fail**'} {len(g64)} params, {len(missing)} missing, {bad} over, "
            f"worst {worst:.2g} of the bound")


def amptrain_train(amptrain, d, onnx_path, epochs, seed, flags):
    metrics = f"{d}/metrics_{'_'.join(flags) or 'fp32'}_{seed}.jsonl"
    cmd = [amptrain, "train", onnx_path, "--data",
           f"npy:ids={d}/x.npy,labels={d}/y.npy,test.ids={d}/xt.npy,test.labels={d}/yt.npy",
           "--epochs", str(epochs), "--batch-size", str(BATCH), "--lr", "1e-3", "--log-every", "50",
           "--seed", str(seed), "--metrics", metrics, "--threads", "2", *flags]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    took = time.time() - t0
    if p.returncode:
        return None, None, took, p.stderr.strip().splitlines()[-1][:200]
    ends = [r for r in map(json.loads, open(metrics)) if r.get("event") == "epoch" and "test_loss" in r]
    if not ends:
        return None, None, took, "no test evaluation in " + metrics
    return ends[-1]["test_loss"], ends[-1]["test_accuracy"], took, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt2,llama")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=3, help="runs per configuration (data order; amptrain --seed)")
    ap.add_argument("--amptrain", default=os.path.join(ROOT, "build/tools/amptrain"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/hf_lm"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs/hf_causal_lm_run.md"))
    a = ap.parse_args()
    torch.set_num_threads(2)
    x, y, xt, yt = text_rows()
    rows = []
    for name in a.models.split(","):
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        for arr, f in ((x, "x"), (y, "y"), (xt, "xt"), (yt, "yt")):
            np.save(f"{d}/{f}.npy", arr)
        torch.manual_seed(0)
        cls, cfg, kw = MODELS[name]
        m = getattr(T, cls)(getattr(T, cfg)(**kw))
        grad = grad_check(a.amptrain, m, d, x)
        mt = copy.deepcopy(m).train()
        torch.onnx.export(Logits(mt), (torch.from_numpy(x[:2]),), f"{d}/train.onnx", dynamo=True, optimize=False,
                          input_names=["ids"], dynamic_shapes={"ids": {0: torch.export.Dim("batch", min=1, max=4096)}})
        steps = a.epochs * -(-len(x) // BATCH)
        results = {}
        for seed in range(a.seeds):
            for prec, flags in (("fp32", []), ("O2 bf16", ["--amp", "O2", "--dtype", "bf16"])):
                results.setdefault(("amptrain", prec), []).append(
                    amptrain_train(a.amptrain, d, f"{d}/train.onnx", a.epochs, seed, flags))
            results.setdefault(("torch eager", "fp32"), []).append((*torch_train(m, x, y, xt, yt, steps, seed), None))
        n_params = sum(p.numel() for p in m.parameters())
        for (runtime, prec), rs in results.items():
            errs = [r[3] for r in rs if r[3]]
            if errs:
                result = f"failed: {errs[0]} | |"
            else:
                losses, accs, took = [r[0] for r in rs], [r[1] for r in rs], [r[2] for r in rs]
                result = (f"{np.mean(losses):.3f} ({min(losses):.3f}-{max(losses):.3f}) | "
                          f"{100 * np.mean(accs):.1f}% | {np.mean(took):.0f} s")
            rows.append(f"| {name} ({n_params / 1e6:.2f}M) | {grad} | {runtime} {prec} | {result} |")
            print(rows[-1], flush=True)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    doc = [f"# Hugging Face causal language models trained on text (tools/bench/hf_causal_lm.py)", "",
           f"{time.strftime('%Y-%m-%d')}, {cpu}, {os.cpu_count()} cores, 2 threads; transformers {T.__version__}, "
           f"torch {torch.__version__}. Text: /usr/share/common-licenses as bytes, {len(x)} training and {len(xt)} "
           f"test rows of {SEQ} tokens; next-token labels (-100 at each row's last token). {a.epochs} epochs "
           f"({a.epochs * -(-len(x) // BATCH)} steps) of batch {BATCH}, Adam lr 1e-3, from the same random initialization. Test loss in nats per token "
           f"(ln 256 = 5.55 is chance): the mean over {a.seeds} data orders (min-max); token accuracy over the "
           "labelled tokens, mean; time: the command's wall time, mean (amptrain's includes the import, planning "
           "and an evaluation per epoch; PyTorch's one evaluation). Gradient check as in docs/hf_transformers.md "
           "(a fifth of the labels -100).", "",
           "| model | grad vs float64 | run | test loss | token accuracy | time |", "|---|---|---|---|---|---|",
           *rows, ""]
    with open(a.doc, "w") as f:
        f.write("\n".join(doc))
    print(f"wrote {a.doc}")


if __name__ == "__main__":
    main()
