#!/usr/bin/env python3
"""Near-ties of a torchvision_coverage.py model's training forward: the discrete decisions that fp32 rounding
can flip, which then move a gradient by far more than rounding does.

  .cache/torch-pypi/bin/python tools/bench/find_ties.py regnet_y_400mf googlenet [--image-size NAME=PX,...]
      [--tol 1e-4] [--top 5]

For each model (torchvision_coverage.py's build(): random weights, seed 0, its input, training mode) one
float64 and one float32 forward, with hooks on
  - every nn.ReLU input (a ReLU decides on its sign), every nn.Hardtanh / nn.ReLU6 input (they decide at
    both edges), or every BatchNormalization output in a model
    without nn.ReLU modules (F.relu after the BN): values whose magnitude is below tol x the RMS of
    their channel (a module called more than once, as in torchvision's ResNet blocks: its last call);
  - every nn.MaxPool2d input: windows whose two largest values differ by less than tol relative (the
    max decides where the window's gradient goes).
Printed with the float32 value beside the float64 one, the riskiest first (risk: the part of the
float64 margin that PyTorch's own float32 rounding moved): where it is a large part, a run that sums in
another order may decide the other way (docs/torchvision_coverage.md, root
cause 4, gives the cases diagnosed this way).
"""
import argparse
import copy
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchvision_coverage as tc  # noqa: E402


def capture(model, x, dtype, bn_outputs):
    """{(kind, module name): tensor} of one training-mode forward in dtype."""
    m = copy.deepcopy(model).to(dtype).train()
    seen = {}
    for name, mod in m.named_modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm) and bn_outputs:
            mod.register_forward_hook(lambda _m, _i, o, n=name: seen.__setitem__(("bn-out", n), o.detach().clone()))
        elif isinstance(mod, nn.ReLU):
            mod.register_forward_pre_hook(lambda _m, i, n=name: seen.__setitem__(("relu-in", n), i[0].detach().clone()))
        elif isinstance(mod, nn.Hardtanh):  # ReLU6 too: it decides at both of its edges
            mod.register_forward_pre_hook(lambda _m, i, n=name: seen.__setitem__(("clamp-in", n), i[0].detach().clone()))
        elif isinstance(mod, nn.MaxPool2d):
            mod.register_forward_pre_hook(lambda _m, i, n=name: seen.__setitem__(("maxpool-in", n), i[0].detach().clone()))
    with torch.no_grad():
        m(x.to(dtype))
    return seen


def sign_ties(v64, v32, tol):
    rms = v64.pow(2).mean(dim=tuple(d for d in range(v64.dim()) if d != 1), keepdim=True).sqrt()
    margin = v64.abs() / rms.clamp_min(1e-300)
    hits = (margin < tol).nonzero()
    return [(tuple(h.tolist()), v64[tuple(h)].item(), v32[tuple(h)].item()) for h in hits]


def pool_ties(v64, v32, pool, tol):
    k, s, p = (pool.kernel_size, pool.stride, pool.padding)
    k = k if isinstance(k, int) else k[0]
    s = s if isinstance(s, int) else s[0]
    p = p if isinstance(p, int) else p[0]
    extra = s - 1 if pool.ceil_mode else 0
    n, c = v64.shape[:2]
    padded = F.pad(v64, (p, p + extra, p, p + extra), value=float("-inf"))
    u = F.unfold(padded.reshape(n * c, 1, *padded.shape[2:]), k, stride=s).reshape(n, c, k * k, -1)
    top = torch.topk(u, 2, dim=2).values
    gap = (top[:, :, 0] - top[:, :, 1]) / top[:, :, 0].abs().clamp_min(1e-300)
    hits = ((gap < tol) & (top[:, :, 0] > 0) & torch.isfinite(top[:, :, 1])).nonzero()
    # The float32 forward's gap in the same window (its own top two).
    p32 = F.pad(v32, (p, p + extra, p, p + extra), value=float("-inf"))
    u32 = F.unfold(p32.reshape(n * c, 1, *p32.shape[2:]), k, stride=s).reshape(n, c, k * k, -1)
    t32 = torch.topk(u32, 2, dim=2).values
    return [(tuple(h.tolist()), (top[h[0], h[1], 0, h[2]] - top[h[0], h[1], 1, h[2]]).item(),
             (t32[h[0], h[1], 0, h[2]] - t32[h[0], h[1], 1, h[2]]).item(), top[h[0], h[1], 0, h[2]].item())
            for h in hits]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--image-size", default="", help="NAME=PX[,NAME=PX...], as torchvision_coverage.py takes it")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--top", type=int, default=5, help="ties printed per model, the riskiest first")
    ap.add_argument("--bn-outputs", action="store_true", help="BN outputs too where the model has nn.ReLU modules")
    args = ap.parse_args()
    try:
        tc.set_image_sizes(args.image_size)
    except ValueError as e:
        ap.error(str(e))
    for name in args.models:
        model, x = tc.build(name)
        # BN outputs stand for the ReLUs of a model that applies them as functions (F.relu); where it has
        # nn.ReLU modules, their inputs are the decisions and a BN output may feed none.
        bn_outputs = args.bn_outputs or not any(isinstance(mod, nn.ReLU) for mod in model.modules())
        s64 = capture(model, x, torch.float64, bn_outputs)
        s32 = capture(model, x, torch.float32, bn_outputs)
        modules = dict(model.named_modules())
        # (risk, text): risk = how much of the float64 margin PyTorch's float32 rounding already moved,
        # |m32 - m64| / |m64|; near 1 or above, another summation order may decide the other way.
        found, seen = [], set()
        for key, v64 in s64.items():
            v32 = s32[key].double()
            if key[0] == "maxpool-in":
                for at, g64, g32, top in pool_ties(v64, v32, modules[key[1]], args.tol):
                    risk = abs(g32 - g64) / max(abs(g64), 1e-300)
                    found.append((risk, f"maxpool {key[1]} input, window {at}: top two {g64:.3g} apart in "
                                        f"float64 ({g64 / top:.2g} relative), {g32:.3g} in float32"))
            elif key[0] == "clamp-in":
                mod = modules[key[1]]
                for edge in (mod.min_val, mod.max_val):
                    for at, a, b in sign_ties(v64 - edge, v32 - edge, args.tol):
                        risk = abs(b - a) / max(abs(a), 1e-300)
                        found.append((risk, f"{key[0]} {key[1]} {at}: edge {edge:g} + float64 {a:.3e}, "
                                            f"float32 {b:.3e}"))
            else:
                for at, a, b in sign_ties(v64, v32, args.tol):
                    if (at, a) in seen:  # a ReLU's input that is the BN output already listed
                        continue
                    seen.add((at, a))
                    risk = abs(b - a) / max(abs(a), 1e-300)
                    found.append((risk, f"{key[0]} {key[1]} {at}: float64 {a:.3e}, float32 {b:.3e}"))
        found.sort(key=lambda t: -t[0])
        print(f"{name} {tuple(x.shape)}: {len(found)} near-ties below {args.tol:g}")
        for risk, line in found[:args.top]:
            print(f"  risk {risk:.2g}: {line}")


if __name__ == "__main__":
    main()
