#!/usr/bin/env python3
"""PyTorch training throughput on one CUDA GPU: the yardstick of the device check.

Runs on the GPU machine (scripts/device_check.sh packs it):
  python3 torch_gpu_train_bench.py --model resnet50 --batch 256 --precision fp16 [--steps 20]

Model: SimpleCNN (models/torch/export_models.py, 1x28x28, 10 classes) or
torchvision's ResNet-50 (3x224x224, 1000 classes), train mode, SGD momentum
0.9, cross-entropy, synthetic data generated on the GPU once. Precision:
fp32 (TF32 off, as amptrain's O0), fp16 (torch.autocast + GradScaler) or
bf16 (torch.autocast). channels_last memory format for the convolutions.
--warmup steps untimed, then --steps timed with CUDA events. Prints one JSON
line: images/s (median of --rounds rounds), step-time percentiles in ms and
the peak allocated device memory in bytes.
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def build(name):
    if name == "simplecnn":
        from export_models import SimpleCNN
        return SimpleCNN(), (1, 28, 28), 10
    import torchvision
    return torchvision.models.resnet50(), (3, 224, 224), 1000


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["simplecnn", "resnet50"], required=True)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    model, shape, classes = build(a.model)
    model = model.to(dev).to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(a.batch, *shape, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, classes, (a.batch,), device=dev)
    loss_fn = nn.CrossEntropyLoss()
    low = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.amp.GradScaler("cuda", enabled=a.precision == "fp16")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=low or torch.float32, enabled=low is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    rates, times = [], []
    for _ in range(a.rounds):
        events = [torch.cuda.Event(enable_timing=True) for _ in range(a.steps + 1)]
        events[0].record()
        for i in range(a.steps):
            step()
            events[i + 1].record()
        torch.cuda.synchronize()
        ms = [events[i].elapsed_time(events[i + 1]) for i in range(a.steps)]
        times += ms
        rates.append(1000.0 * a.batch * a.steps / sum(ms))
    times.sort()
    pct = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
    print(json.dumps({"model": a.model, "batch": a.batch, "precision": a.precision,
                      "images_per_s": statistics.median(rates), "rounds": rates,
                      "step_ms_p50": pct(0.5), "step_ms_p90": pct(0.9), "step_ms_max": times[-1],
                      "peak_bytes": torch.cuda.max_memory_allocated(), "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    main()
