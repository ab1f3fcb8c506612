#!/usr/bin/env python3
"""Does PyTorch's own float32 pass the gradient yardstick of torchvision_coverage.py when it sums in
another, equally valid order?

  .cache/torch-pypi/bin/python tools/bench/grad_order_variants.py resnet50 inception_v3 [--threads 2]
      [--image-size resnet50=128,...]

For each model (torchvision_coverage.py's build(): random weights, seed 0, its input size, batch 2,
training mode, its labels): float64 gradients (the reference), PyTorch float32 by default (the
yardstick: a tensor passes when |g - ref64| <= max(1e-4 |ref64|, 10 |torch32 - ref64|)), then float32
again as channels_last, on one thread, and with oneDNN (mkldnn) off; prints how many tensors of each
variant fail the yardstick and the worst ratio. A variant failing where amptrain fails shows a tie that
fp32 cannot resolve (docs/torchvision_coverage.md, root cause 4).
"""
import argparse
import copy
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchvision_coverage as tc  # noqa: E402


def gradients(model, x, labels, dtype, variant=None):
    m = copy.deepcopy(model).to(dtype).train()
    xx = x.to(dtype)
    if variant == "channels_last":
        m = m.to(memory_format=torch.channels_last)
        xx = xx.contiguous(memory_format=torch.channels_last)
    threads = torch.get_num_threads()
    if variant == "one_thread":
        torch.set_num_threads(1)
    with torch.backends.mkldnn.flags(enabled=variant != "no_mkldnn"):
        F.cross_entropy(m(xx), labels).backward()
    torch.set_num_threads(threads)
    return {n: p.grad.detach().double().numpy() for n, p in m.named_parameters()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--image-size", default="", help="NAME=PX[,NAME=PX...], as torchvision_coverage.py takes it")
    args = ap.parse_args()
    try:
        tc.set_image_sizes(args.image_size)
    except ValueError as e:
        ap.error(str(e))
    torch.set_num_threads(args.threads)
    for name in args.models:
        model, x = tc.build(name)
        model.train()
        gen = torch.Generator().manual_seed(2)
        labels = torch.randint(0, tc.NUM_CLASSES, (x.shape[0],), generator=gen, dtype=torch.int64)
        g64 = gradients(model, x, labels, torch.float64)
        g32 = gradients(model, x, labels, torch.float32)
        for variant in ("channels_last", "one_thread", "no_mkldnn"):
            gv = gradients(model, x, labels, torch.float32, variant)
            over, worst = 0, (0.0, None)
            for n, ref in g64.items():
                bound = max(1e-4 * np.linalg.norm(ref), 10 * np.linalg.norm(g32[n] - ref), 1e-30)
                ratio = np.linalg.norm(gv[n] - ref) / bound
                worst = max(worst, (ratio, n), key=lambda t: t[0])
                over += ratio > 1
            print(f"{name} torch fp32 {variant}: {over} of {len(g64)} tensors over the yardstick, "
                  f"worst {worst[0]:.3g} at {worst[1]}", flush=True)


if __name__ == "__main__":
    main()
