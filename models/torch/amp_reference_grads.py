#!/usr/bin/python3
"""Gradient yardsticks for mixed precision: a training-mode ONNX export and
the loss gradients of every parameter in float64 (the reference), float32
and PyTorch CPU autocast bf16, all from the same weights, input and labels.

  .venv/bin/python models/torch/amp_reference_grads.py --model simplecnn --out DIR --batch 8
  .venv/bin/python models/torch/amp_reference_grads.py --model resnet18 --out DIR --batch 4 \
      --image-size 32 --small-input

Writes into DIR:
  model.onnx, input_0.npy, labels.npy     as models/torch/reference_grads.py
  grads64/<name>.npy                      float64 model and input (the reference)
  grads32/<name>.npy                      float32
  grads_autocast_bf16/<name>.npy          float32 weights, torch.autocast("cpu", torch.bfloat16)
  meta.json                               {"params": [...], "autocast": ["bf16"], "maxpool_min_gap": ...}
BN uses batch statistics and Dropout is the identity, as in `amptrain grad`.
PyTorch 1.13's CPU autocast supports bfloat16 only, so there is no fp16
autocast yardstick here.
"""
import argparse
import copy
import json
import os

import numpy as np
import torch
import torch.nn.functional as F

from export_models import build_model, export, set_reference_train_mode


def grads(model, x, labels, autocast=None):
    set_reference_train_mode(model)
    model.zero_grad()
    if autocast is None:
        logits = model(x)
    else:
        with torch.autocast("cpu", dtype=autocast):
            logits = model(x)
    loss = F.cross_entropy(logits.to(x.dtype if x.is_floating_point() else torch.float32), labels)
    loss.backward()
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.requires_grad}, loss


def maxpool_min_gap(model, x):
    """The smallest gap between the two largest values of a max-pooling window whose largest value is
    positive, relative to it, over every MaxPool2d of a forward pass (None without one). Below ~1e-5 the
    winner of that window in float32 depends on the summation order of the layers before it (AVX2 or
    AVX-512 convolutions), and the gradient goes wholly to one position or the other: a float32 check would
    measure which side of the tie a CPU lands on."""
    gaps = []

    def hook(mod, inputs, _):
        t = inputs[0]
        k = mod.kernel_size if isinstance(mod.kernel_size, int) else mod.kernel_size[0]
        windows = F.unfold(t.reshape(-1, 1, *t.shape[2:]), k, stride=mod.stride)
        top = windows.topk(2, dim=1).values
        rel = (top[:, 0] - top[:, 1]) / top[:, 0].abs().clamp_min(1e-300)
        rel = rel[top[:, 0] > 0]
        if rel.numel():
            gaps.append(rel.min().item())

    hooks = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.MaxPool2d)]
    set_reference_train_mode(model)
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return min(gaps) if gaps else None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="simplecnn", choices=["simplecnn", "resnet18", "largemeanbn"])
    p.add_argument("--out", required=True)
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--image-size", type=int, default=None)
    p.add_argument("--in-channels", type=int, default=None)
    p.add_argument("--num-classes", type=int, default=None)
    p.add_argument("--small-input", action="store_true")
    args = p.parse_args()
    model, x = build_model(args.model, args)
    export(model, x, os.path.join(args.out, "model.onnx"), args.opset, "train")
    gen = torch.Generator().manual_seed(args.seed + 2)
    with torch.no_grad():
        k = model(x).shape[1]
    labels = torch.randint(0, k, (x.shape[0],), generator=gen, dtype=torch.int64)
    np.save(os.path.join(args.out, "input_0.npy"), x.numpy())
    np.save(os.path.join(args.out, "labels.npy"), labels.numpy())

    runs = {
        "grads64": grads(copy.deepcopy(model).double(), x.double(), labels),
        "grads32": grads(copy.deepcopy(model), x, labels),
        "grads_autocast_bf16": grads(copy.deepcopy(model), x, labels, torch.bfloat16),
    }
    names = list(runs["grads64"][0].keys())
    for folder, (g, loss) in runs.items():
        os.makedirs(os.path.join(args.out, folder), exist_ok=True)
        for name, t in g.items():
            np.save(os.path.join(args.out, folder, name + ".npy"), t.double().numpy())
        print(f"{args.model} {folder}: loss {loss.item():.6f}")
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump({"model": args.model, "batch": args.batch, "seed": args.seed, "params": names,
                   "autocast": ["bf16"], "torch": torch.__version__,
                   "maxpool_min_gap": maxpool_min_gap(copy.deepcopy(model).double(), x.double())}, f, indent=1)


if __name__ == "__main__":
    main()
