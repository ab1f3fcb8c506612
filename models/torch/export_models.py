#!/usr/bin/python3
"""Export PyTorch reference models to ONNX, with reference input/output data.

Run with Debian's python (it has torch 1.13 + torchvision 0.14; no downloads,
all weights come from seeded random init):

  /usr/bin/python3 models/torch/export_models.py --out /tmp/models \
      --models simplecnn,resnet18 --opsets 13,17 --modes train,eval --batch 2 --seed 0
  /usr/bin/python3 models/torch/export_models.py --out /tmp/models \
      --models resnet50 --opsets 17 --modes eval --image-size 64

For each (model, opset, mode) it writes
  DIR/<model>_<mode>_op<opset>.onnx
  DIR/<model>_<mode>_op<opset>.data/{input_0.npy[, input_1.npy], output_0.npy, meta.json}
and, for resnet18 with eval mode, DIR/resnet18_evalfold_op<opset>.onnx (+ .data/):
the same model exported with TrainingMode.EVAL + do_constant_folding=True
(Conv+BN fused, initializers renamed by the exporter).

Graph I/O names: inputs "input_0", "input_1", ... (batch dim symbolic, "batch"), output "output_0".
Initializers of the train/eval exports keep their state_dict names (printed).

Modes:
  train: TrainingMode.TRAINING, no constant folding. Graph has BatchNormalization in
         training mode and Dropout nodes. output_0.npy is computed with BN using batch
         statistics and Dropout as identity (meta.json says so).
  eval:  model.eval() exported with TrainingMode.PRESERVE, no constant folding
         (TrainingMode.EVAL would fuse Conv+BN and rename initializers even without
         constant folding), top-level module flagged training so torch does not merge
         equal-valued initializers into Identity nodes. BN running stats are made
         non-trivial by a few train-mode forward passes on random data, and BN/LN
         scale/shift are randomized (1+0.1*N(0,1), 0.1*N(0,1)).
  A train-mode export traces one forward pass, so its BN running_mean/var initializers
  are the values after one update with input_0 (harmless: the train output uses batch stats).

Models (module attribute names, i.e. state_dict prefixes):
  simplecnn:   features.{0:Conv,1:BN,2:ReLU,3:MaxPool,4:Conv,5:BN,6:ReLU,7:MaxPool},
               classifier.{0:Flatten,1:Linear,2:ReLU,3:Dropout(0.5),4:Linear}
               (--in-channels default 1, --image-size default 28, 10 classes)
  resnet18/50: torchvision (weights=None), --num-classes default 1000,
               --image-size default 224; --small-input = CIFAR-style stem
               (conv1 3x3 stride 1, maxpool Identity).
  transformer: tok_emb (Embedding 1000x64), pos_emb (Parameter [1,16,64]),
               layers.{0,1} (TransformerEncoderLayer d=64, 4 heads, ff=128, gelu,
               batch_first, dropout 0.1), norm (LayerNorm), head (Linear 64->10).
               Input int64 token ids [batch, 16], mean-pool over the sequence.
  masked_transformer: transformer with a second input, mask float32 [batch, 16], that
               weights the mean pool (inputs input_0: token ids, input_1: mask).
  gru_seq_major: the gru classifier sequence-major (batch_first=False): token ids
               [16, batch], logits [batch, 10] from the last step.
  token_lm:    transformer with a causal mask and no pooling: logits per token
               [batch, 16, 1000] (a language model; labels [batch, 16]).
  segnet:      conv1/bn1 (3->16, 3x3), conv2/bn2 (16->32, stride 2), bilinear x2,
               concat, head (1x1 -> --num-classes, default 5): logits per pixel
               [batch, 5, H, W] (--image-size default 16).
  causal_transformer: transformer with a causal attention mask and pos_table
               (Embedding 16x64) gathered with constant indices instead of pos_emb:
               the export whose attention output projections (Transpose(weight) ->
               MatMul) and position table amptrain's import once folded into
               constants (issue 10, item 2).
"""
import argparse
import math
import copy
import json
import os
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torchvision

SEQ_LEN, VOCAB = 16, 1000


class SimpleCNN(nn.Module):
    def __init__(self, in_channels=1, image_size=28, num_classes=10):
        super().__init__()
        h = w = image_size
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(128 * (h // 4) * (w // 4), 512), nn.ReLU(),
            nn.Dropout(0.5), nn.Linear(512, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


class LargeMeanBN(nn.Module):
    """Conv -> x * 0.05 + 20 -> BatchNorm (training mode) -> ReLU -> Flatten -> Linear: an activation with a
    large mean and a small spread before BN, as after ReLU6 and in deep nets (issue 10, item 5: the oneDNN
    BN backward lost 3 digits of the BN-bias gradient there)."""

    def __init__(self, in_channels=8, image_size=16, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * image_size * image_size, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.bn(self.conv(x) * 0.05 + 20)), 1))


class SmallTransformer(nn.Module):
    def __init__(self, vocab=VOCAB, d=64, seq=SEQ_LEN, num_classes=10):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model=d, nhead=4, dim_feedforward=128, activation="gelu",
                                       batch_first=True, dropout=0.1) for _ in range(2)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, num_classes)

    def forward(self, tokens):
        x = self.tok_emb(tokens) + self.pos_emb[:, :tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x).mean(dim=1))


class CausalTransformer(SmallTransformer):
    def __init__(self, vocab=VOCAB, d=64, seq=SEQ_LEN, num_classes=10):
        super().__init__(vocab, d, seq, num_classes)
        del self.pos_emb
        self.pos_table = nn.Embedding(seq, d)
        self.register_buffer("positions", torch.arange(seq), persistent=False)
        # A plain tensor, not a buffer: exported as a Constant, not as a (float) initializer.
        self.mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)

    def forward(self, tokens):
        x = self.tok_emb(tokens) + self.pos_table(self.positions)
        for layer in self.layers:
            x = layer(x, src_mask=self.mask)
        return self.head(self.norm(x).mean(dim=1))


class SinCosTransformer(SmallTransformer):
    """Sinusoidal positions and the causal mask computed in forward (arange, exp, sin, cos, triu), as
    from-scratch GPT-style code writes them: the export has Sin, Cos and Trilu nodes."""
    def __init__(self, vocab=VOCAB, d=64, seq=SEQ_LEN, num_classes=10):
        super().__init__(vocab, d, seq, num_classes)
        del self.pos_emb
        self.d = d

    def forward(self, tokens):
        t = tokens.shape[1]
        pos = torch.arange(t, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(torch.arange(0, self.d, 2, dtype=torch.float32) * (-math.log(10000.0) / self.d))
        pe = torch.stack([torch.sin(pos * div), torch.cos(pos * div)], dim=-1).flatten(1)
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        x = self.tok_emb(tokens) + pe
        for layer in self.layers:
            x = layer(x, src_mask=mask)
        return self.head(self.norm(x).mean(dim=1))


class TokenLM(SmallTransformer):
    """A GPT-style language model: causal attention and a logit row per token, output [batch, seq, vocab]
    (trained with a label per token: the next token, or -100 where nothing is predicted)."""
    def __init__(self, vocab=VOCAB, d=64, seq=SEQ_LEN):
        super().__init__(vocab, d, seq, num_classes=vocab)
        self.mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)

    def forward(self, tokens):
        x = self.tok_emb(tokens) + self.pos_emb[:, :tokens.shape[1]]
        for layer in self.layers:
            x = layer(x, src_mask=self.mask)
        return self.head(self.norm(x))


class SegNet(nn.Module):
    """Per-pixel classes, output [batch, classes, H, W]: Conv-BN-ReLU, a strided Conv-BN-ReLU, bilinear
    upsampling back to full size, the two concatenated, a 1x1 Conv head (a small U-Net/FCN)."""
    def __init__(self, in_channels=3, num_classes=5):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(in_channels, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.conv2, self.bn2 = nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32)
        self.head = nn.Conv2d(48, num_classes, 1)

    def forward(self, x):
        a = torch.relu(self.bn1(self.conv1(x)))
        b = torch.relu(self.bn2(self.conv2(a)))
        up = nn.functional.interpolate(b, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.head(torch.cat([a, up], dim=1))


class ActivationsNet(nn.Module):
    """An MLP through the activations and tensor functions a user's model may use beyond ReLU:
    PReLU (per feature), ELU, Softplus, SELU, CELU, Mish, cumsum and logsumexp."""
    def __init__(self, features=24, num_classes=10):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(features, 32), nn.Linear(32, 32), nn.Linear(32, 32)
        self.prelu = nn.PReLU(32, init=0.2)
        self.head = nn.Linear(32 * 2 + 1, num_classes)

    def forward(self, x):
        h = nn.functional.elu(self.prelu(self.fc1(x)), alpha=0.7)
        h = nn.functional.selu(self.fc2(nn.functional.softplus(h)))
        h = nn.functional.mish(self.fc3(nn.functional.celu(h, alpha=1.3)))
        return self.head(torch.cat([h, torch.cumsum(h, dim=1) / 8, torch.logsumexp(h, dim=1, keepdim=True)], 1))


class NormsNet(nn.Module):
    """GroupNorm, InstanceNorm2d (affine, so its weights start at ones/zeros and must still train),
    PixelShuffle and PixelUnshuffle: InstanceNormalization and DepthToSpace in the export."""
    def __init__(self, num_classes=10):
        super().__init__()
        self.c1, self.gn = nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16)
        self.shuffle, self.c2 = nn.PixelShuffle(2), nn.Conv2d(4, 8, 3, padding=1)
        self.inorm, self.unshuffle = nn.InstanceNorm2d(8, affine=True), nn.PixelUnshuffle(2)
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        h = self.shuffle(torch.relu(self.gn(self.c1(x))))
        h = self.unshuffle(torch.relu(self.inorm(self.c2(h))))
        return self.head(h.mean(dim=(2, 3)))


class MaskedPoolTransformer(SmallTransformer):
    """transformer whose mean pool is weighted by a float mask [batch, seq] (1 keeps a position, 0 drops it):
    a model with two data inputs of different dtypes."""

    def forward(self, tokens, mask):
        x = self.tok_emb(tokens) + self.pos_emb[:, :tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        w = mask.unsqueeze(-1)
        return self.head((self.norm(x) * w).sum(dim=1) / w.sum(dim=1).clamp(min=1.0))


class RecurrentClassifier(nn.Module):
    """Token ids -> Embedding -> 2-layer bidirectional LSTM or GRU (batch first) -> last step -> Linear.
    batch_axis=1: sequence-major ([seq, batch] ids, batch_first=False, PyTorch's default)."""

    def __init__(self, cell, vocab=VOCAB, d=32, hidden=24, num_classes=10, batch_axis=0):
        super().__init__()
        self.batch_axis = batch_axis
        self.tok_emb = nn.Embedding(vocab, d)
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(d, hidden, num_layers=2, batch_first=batch_axis == 0,
                                                            bidirectional=True)
        self.head = nn.Linear(2 * hidden, num_classes)

    def forward(self, tokens):
        y, _ = self.rnn(self.tok_emb(tokens))
        return self.head(y[:, -1] if self.batch_axis == 0 else y[-1])


def randomize_norm_affine(model, gen):
    """Non-trivial BN/LN scale and shift (default init is 1/0, which hides kernel bugs)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm)) and m.weight is not None:
                m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))


def build_model(name, args):
    """Returns (model, example_input) built deterministically from args.seed."""
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed + 1)
    if name == "simplecnn":
        size = args.image_size or 28
        ch = args.in_channels or 1
        model = SimpleCNN(ch, size, args.num_classes or 10)
    elif name == "largemeanbn":
        size = args.image_size or 16
        ch = args.in_channels or 8
        model = LargeMeanBN(ch, size, args.num_classes or 10)
    elif name == "segnet":
        size = args.image_size or 16
        ch = args.in_channels or 3
        model = SegNet(ch, args.num_classes or 5)
    elif name == "token_lm":
        model = TokenLM()
        randomize_norm_affine(model, gen)
        return model, torch.randint(0, VOCAB, (args.batch, SEQ_LEN), generator=gen, dtype=torch.int64)
    elif name in ("resnet18", "resnet50"):
        size = args.image_size or 224
        ch = args.in_channels or 3
        model = getattr(torchvision.models, name)(weights=None, num_classes=args.num_classes or 1000)
        if args.small_input:
            model.conv1 = nn.Conv2d(ch, 64, 3, 1, 1, bias=False)
            model.maxpool = nn.Identity()
        elif ch != 3:
            model.conv1 = nn.Conv2d(ch, 64, 7, 2, 3, bias=False)
    elif name in ("lstm", "gru"):
        model = RecurrentClassifier(name, num_classes=args.num_classes or 10)
        x = torch.randint(0, VOCAB, (args.batch, SEQ_LEN), generator=gen, dtype=torch.int64)
        return model, x
    elif name == "gru_seq_major":
        model = RecurrentClassifier("gru", num_classes=args.num_classes or 10, batch_axis=1)
        return model, torch.randint(0, VOCAB, (SEQ_LEN, args.batch), generator=gen, dtype=torch.int64)
    elif name == "norms":
        model = NormsNet(num_classes=args.num_classes or 10)
        randomize_norm_affine(model, gen)
        return model, torch.randn(args.batch, 3, 8, 8, generator=gen)
    elif name == "activations":
        model = ActivationsNet(num_classes=args.num_classes or 10)
        with torch.no_grad():  # PReLU slopes of both signs and sizes
            model.prelu.weight.uniform_(-0.5, 0.5, generator=gen)
        return model, torch.randn(args.batch, 24, generator=gen)
    elif name in ("transformer", "causal_transformer", "masked_transformer", "sincos_transformer"):
        cls = {"transformer": SmallTransformer, "causal_transformer": CausalTransformer,
               "masked_transformer": MaskedPoolTransformer, "sincos_transformer": SinCosTransformer}[name]
        model = cls(num_classes=args.num_classes or 10)
        randomize_norm_affine(model, gen)
        x = torch.randint(0, VOCAB, (args.batch, SEQ_LEN), generator=gen, dtype=torch.int64)
        if name == "masked_transformer":
            mask = (torch.arange(SEQ_LEN)[None, :] < torch.randint(4, SEQ_LEN + 1, (args.batch, 1), generator=gen))
            return model, (x, mask.float())
        return model, x
    else:
        raise SystemExit(f"unknown model {name}")
    x = torch.randn(args.batch, ch, size, size, generator=gen)
    randomize_norm_affine(model, gen)
    # Make BN running stats non-trivial: a few train-mode passes on random data.
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn(x.shape, generator=gen) * 2 + 0.5)
    return model, x


def set_reference_train_mode(model):
    """BN uses batch statistics; Dropout (incl. attention dropout) is identity."""
    model.train()
    for m in model.modules():
        if not isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.training = False


def export(model, x, path, opset, mode, fold=False):
    """Note: a train-mode export traces one forward pass, which updates the BN running
    stats; the exported initializers hold the *updated* values (= model state after
    this call), so the model is deliberately not restored here."""
    training = {"train": torch.onnx.TrainingMode.TRAINING,
                "eval": torch.onnx.TrainingMode.PRESERVE,
                "evalfold": torch.onnx.TrainingMode.EVAL}[mode]
    model.train(mode == "train")
    if mode == "eval":
        # torch 1.13 merges equal-valued initializers (e.g. all-zero biases) into one plus
        # Identity nodes when the *top-level* module is in eval mode. Only the top flag
        # is read by that pass; submodules (BN, Dropout, MHA) stay in eval mode.
        model.training = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xs = x if isinstance(x, tuple) else (x,)
        names = [f"input_{i}" for i in range(len(xs))]
        batch_axis = getattr(model, "batch_axis", 0)  # sequence-major models take [seq, batch]
        axes = {n: {batch_axis: "batch"} for n in names}
        axes["output_0"] = {0: "batch"}
        torch.onnx.export(model, xs, path, opset_version=opset, training=training, do_constant_folding=fold,
                          input_names=names, output_names=["output_0"], dynamic_axes=axes)


def reference_output(model, x, mode):
    state = copy.deepcopy(model.state_dict())
    if mode == "train":
        set_reference_train_mode(model)
    else:
        model.eval()
    # grad enabled on purpose: keeps nn.TransformerEncoderLayer off its fused fast path.
    y = model(*(x if isinstance(x, tuple) else (x,))).detach().numpy()
    model.load_state_dict(state)
    return y


def write_case(model, x, out, stem, opset, mode):
    path = os.path.join(out, stem + ".onnx")
    state = copy.deepcopy(model.state_dict())  # every case starts from the same state
    t0 = time.time()
    export(model, x, path, opset, mode, fold=(mode == "evalfold"))
    dt = time.time() - t0
    data = os.path.join(out, stem + ".data")
    os.makedirs(data, exist_ok=True)
    for i, xi in enumerate(x if isinstance(x, tuple) else (x,)):
        np.save(os.path.join(data, f"input_{i}.npy"), xi.numpy())
    np.save(os.path.join(data, "output_0.npy"), reference_output(model, x, mode))
    meta = {"mode": "train", "dropout": "identity_in_reference", "batchnorm": "batch_statistics"} \
        if mode == "train" else {"mode": "eval", "dropout": "identity", "batchnorm": "running_statistics"}
    meta.update(opset=opset, constant_folding=(mode == "evalfold"))
    with open(os.path.join(data, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    model.load_state_dict(state)
    print(f"wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB, export {dt:.1f}s)")
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--models", default="simplecnn,resnet18,resnet50,transformer")
    p.add_argument("--opsets", default="13,17")
    p.add_argument("--modes", default="train,eval")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--image-size", type=int, default=None, help="default 28 simplecnn, 224 resnets")
    p.add_argument("--in-channels", type=int, default=None, help="default 1 simplecnn, 3 resnets")
    p.add_argument("--num-classes", type=int, default=None, help="default 10, 1000 for resnets")
    p.add_argument("--small-input", action="store_true", help="CIFAR-style resnet stem")
    p.add_argument("--quiet", action="store_true", help="don't print initializer names")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models.split(","):
        model, x = build_model(name, args)
        if not args.quiet:
            print(f"{name}: state_dict keys: {list(model.state_dict().keys())}")
        for opset in map(int, args.opsets.split(",")):
            for mode in args.modes.split(","):
                write_case(model, x, args.out, f"{name}_{mode}_op{opset}", opset, mode)
                if mode == "eval" and name == "resnet18":
                    write_case(model, x, args.out, f"{name}_evalfold_op{opset}", opset, "evalfold")


if __name__ == "__main__":
    main()
