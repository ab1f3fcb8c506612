#!/usr/bin/python3
"""Gradient oracle: training-mode ONNX export + PyTorch loss and parameter gradients.

Run with Debian's python (torch 1.13):

  /usr/bin/python3 models/torch/reference_grads.py --model simplecnn --out /tmp/grad_simplecnn \
      --opset 17 --batch 4
  /usr/bin/python3 models/torch/reference_grads.py --model resnet18 --out /tmp/grad_resnet18 \
      --opset 17 --batch 4 --image-size 32 --small-input

Writes into DIR:
  model.onnx             training-mode export (same as export_models.py train mode:
                         BatchNormalization training_mode=1, Dropout nodes kept,
                         initializer names = state_dict keys, input "input_0",
                         output "output_0" = logits, symbolic batch dim)
  input_0.npy            seeded random input (fp32 images, or int64 tokens for transformer)
  labels.npy             int64 class ids, shape [batch] (token_lm: [batch, seq], a fifth of
                         them --ignore-index; segnet: [batch, H, W], the same)
  output_0.npy           logits
  loss.npy               scalar fp32: mean softmax cross-entropy(logits, labels)
  grads/<name>.npy       d loss / d param for every parameter with requires_grad,
                         <name> = state_dict key (e.g. features.0.weight)
  running_stats/<bn module>.running_{mean,var}.npy  BN buffers after this one step,
                         starting from the initializer values in model.onnx. running_mean
                         matches ONNX BatchNormalization(training_mode=1) output 1;
                         PyTorch updates running_var with the *unbiased* batch variance
                         (ONNX/ORT use the biased one), so output 2 differs by n/(n-1).
  meta.json              {"mode": "train", "dropout": "identity_in_reference",
                          "batchnorm": "batch_statistics", "loss": "mean_softmax_cross_entropy", ...}
The reference uses BN with batch statistics and Dropout as identity (p ignored).
Model options are those of export_models.py (--image-size, --in-channels,
--num-classes, --small-input, --seed).
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from export_models import build_model, export, set_reference_train_mode


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="simplecnn", choices=["simplecnn", "resnet18", "resnet50", "transformer", "causal_transformer", "lstm", "gru",
                                                             "sincos_transformer", "activations", "norms",
                                                             "token_lm", "segnet"])
    p.add_argument("--out", required=True)
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--image-size", type=int, default=None)
    p.add_argument("--in-channels", type=int, default=None)
    p.add_argument("--num-classes", type=int, default=None)
    p.add_argument("--small-input", action="store_true")
    p.add_argument("--ignore-index", type=int, default=-100,
                   help="per-token/pixel models: about a fifth of the labels are this (ignored by the loss)")
    args = p.parse_args()
    os.makedirs(os.path.join(args.out, "grads"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "running_stats"), exist_ok=True)

    model, x = build_model(args.model, args)
    # After export the model's BN buffers equal the exported initializers (see export()).
    export(model, x, os.path.join(args.out, "model.onnx"), args.opset, "train")

    set_reference_train_mode(model)
    model.zero_grad()
    logits = model(x)
    gen = torch.Generator().manual_seed(args.seed + 2)
    if logits.dim() == 2:
        labels = torch.randint(0, logits.shape[1], (x.shape[0],), generator=gen, dtype=torch.int64)
        loss = F.cross_entropy(logits, labels)
    else:  # a label per token (classes last) or per pixel (classes first), some ignored
        classes_last = args.model == "token_lm"
        classes = logits.shape[-1] if classes_last else logits.shape[1]
        shape = logits.shape[:-1] if classes_last else logits.shape[:1] + logits.shape[2:]
        labels = torch.randint(0, classes, shape, generator=gen, dtype=torch.int64)
        labels[torch.rand(shape, generator=gen) < 0.2] = args.ignore_index
        if classes_last:
            loss = F.cross_entropy(logits.reshape(-1, classes), labels.reshape(-1), ignore_index=args.ignore_index)
        else:
            loss = F.cross_entropy(logits, labels, ignore_index=args.ignore_index)
    loss.backward()

    save = lambda rel, t: np.save(os.path.join(args.out, rel), t.detach().cpu().numpy())
    save("input_0.npy", x)
    save("labels.npy", labels)
    save("output_0.npy", logits)
    save("loss.npy", loss)
    names = []
    for name, prm in model.named_parameters():
        if prm.requires_grad:
            save(os.path.join("grads", name + ".npy"), prm.grad)
            names.append(name)
    for name, mod in model.named_modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            save(os.path.join("running_stats", name + ".running_mean.npy"), mod.running_mean)
            save(os.path.join("running_stats", name + ".running_var.npy"), mod.running_var)
    meta = {"mode": "train", "dropout": "identity_in_reference", "batchnorm": "batch_statistics",
            "loss": "mean_softmax_cross_entropy", "model": args.model, "opset": args.opset,
            "batch": args.batch, "seed": args.seed, "params": names}
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{args.model}: loss={loss.item():.6f}, {len(names)} grads -> {args.out}")


if __name__ == "__main__":
    main()
