#!/usr/bin/env python3
"""MindSpore (CPU) training throughput of SimpleCNN and ResNet-18, the architectures of amp_training.py.

  .cache/mindspore/bin/python tools/bench/mindspore_train_bench.py MODEL BATCH STEPS WINDOW THREADS MODE

MODEL: simplecnn (3x32x32, models/torch/export_models.py's SimpleCNN) or resnet18 (torchvision's
BasicBlock ResNet-18 with the CIFAR stem: 3x3 conv, no max pooling; 10 classes). MODE: fp32, or
LEVEL-DTYPE for mindspore.amp.auto_mixed_precision (O1-fp16, O2-fp16, O2-bf16, ...). Graph mode,
Adam 1e-3, sparse softmax cross-entropy, training mode (BN batch statistics, Dropout 0.5), synthetic
data: 4 batches held in memory, as the PyTorch side of amp_training.py does. fp16 runs without loss
scaling: MindSpore's loss-scale cells check overflow with an Ascend-only op on the CPU
(NPUGetFloatStatusV2). The first WINDOW steps (graph compilation) are not timed; then STEPS steps in
windows of WINDOW. Prints one JSON line: images/s per window and their median, and the last loss.

The venv (not a project dependency; about 2 GB):
  python3 -m venv .cache/mindspore && .cache/mindspore/bin/pip install mindspore
"""
import json
import statistics
import sys
import time

import numpy as np
import mindspore as ms
from mindspore import amp, nn, ops


def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, pad_mode="pad", padding=1, has_bias=False)


class SimpleCNN(nn.Cell):
    def __init__(self, image_size=32, num_classes=10):
        super().__init__()
        self.features = nn.SequentialCell([
            nn.Conv2d(3, 64, 3, pad_mode="pad", padding=1, has_bias=True), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(64, 128, 3, pad_mode="pad", padding=1, has_bias=True), nn.BatchNorm2d(128), nn.ReLU(),
            nn.MaxPool2d(2, 2)])
        side = image_size // 4
        self.classifier = nn.SequentialCell([
            nn.Flatten(), nn.Dense(128 * side * side, 512), nn.ReLU(), nn.Dropout(p=0.5), nn.Dense(512, num_classes)])

    def construct(self, x):
        return self.classifier(self.features(x))


class BasicBlock(nn.Cell):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = conv3x3(cin, cout, stride), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = conv3x3(cout, cout), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.SequentialCell([nn.Conv2d(cin, cout, 1, stride=stride, has_bias=False),
                                                 nn.BatchNorm2d(cout)])

    def construct(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(y + shortcut)


class ResNet18(nn.Cell):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.SequentialCell([conv3x3(3, 64), nn.BatchNorm2d(64), nn.ReLU()])
        blocks, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.SequentialCell(blocks)
        self.pool = ops.AdaptiveAvgPool2D(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(512, num_classes)

    def construct(self, x):
        return self.fc(self.flatten(self.pool(self.layers(self.stem(x)))))


def main():
    model_name, batch, steps, window, threads, mode = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                                        int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    ms.set_device("CPU")
    ms.device_context.cpu.op_tuning.threads_num(threads)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = SimpleCNN() if model_name == "simplecnn" else ResNet18()
    if mode != "fp32":
        level, dtype = mode.split("-")
        net = amp.auto_mixed_precision(net, level, {"fp16": ms.float16, "bf16": ms.bfloat16}[dtype])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
    train.set_train()
    rng = np.random.default_rng(0)
    xs = [ms.Tensor(rng.standard_normal((batch, 3, 32, 32), dtype=np.float32)) for _ in range(4)]
    ys = [ms.Tensor(rng.integers(0, 10, batch).astype(np.int32)) for _ in range(4)]

    def step(i):
        return float(train(xs[i % 4], ys[i % 4]).asnumpy())  # asnumpy waits for the step

    for i in range(window):
        step(i)
    rates, loss = [], float("nan")
    for _ in range(max(1, steps // window)):
        t0 = time.perf_counter()
        for i in range(window):
            loss = step(i)
        rates.append(window * batch / (time.perf_counter() - t0))
    print(json.dumps({"windows": rates, "median": statistics.median(rates), "loss": loss}))


if __name__ == "__main__":
    main()
