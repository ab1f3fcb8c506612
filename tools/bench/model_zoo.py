"""Small PyTorch models beyond the torchvision classifiers, for tools/bench/torchvision_coverage.py
(`--models zoo` or any of the names below). Each reaches for layers and tensor functions that a user's
own model would use and the classifiers do not: recurrent and causal-attention text models, 1-D and 3-D
convolutions, encoder-decoder image nets, normalizations other than BatchNorm, activations beyond ReLU,
and tensor functions (cumsum, flip, comparisons, reductions) in the forward pass.

Every builder returns (model, example input) with seeded random weights and a [batch, NUM_CLASSES]
output (dense models end in a mean over their spatial or time axes and a Linear), so that the coverage
script's inference, gradient and conversion checks apply unchanged.
"""
import math

NUM_CLASSES = 10
BATCH = 2
VOCAB, SEQ = 100, 16


def _nn():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    return torch, nn, F


def gpt_mini(gen):
    """Token ids -> Embedding + sinusoidal positions computed in forward (arange/exp/sin/cos) -> 2 pre-norm
    blocks with a causal mask made in forward (triu) and tanh-GELU MLPs -> last token -> Linear."""
    torch, nn, F = _nn()

    class Block(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.h)
            mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self, d=64):
            super().__init__()
            self.d = d
            self.emb = nn.Embedding(VOCAB, d)
            self.blocks = nn.Sequential(Block(d, 4), Block(d, 4))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, ids):
            t = ids.shape[1]
            pos = torch.arange(t, dtype=torch.float32).unsqueeze(1)
            div = torch.exp(torch.arange(0, self.d, 2, dtype=torch.float32) * (-math.log(10000.0) / self.d))
            pe = torch.stack([torch.sin(pos * div), torch.cos(pos * div)], dim=-1).flatten(1)
            x = self.blocks(self.emb(ids) + pe)
            return self.head(self.ln(x)[:, -1])

    return GPT(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def gru_classifier(gen):
    """Token ids -> Embedding -> 2-layer bidirectional GRU -> mean over time -> Linear."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 24)
            self.gru = nn.GRU(24, 32, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(64, NUM_CLASSES)

        def forward(self, ids):
            y, _ = self.gru(self.emb(ids))
            return self.head(y.mean(dim=1))

    return M(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def conv1d_audio(gen):
    """A waveform classifier: Conv1d, GroupNorm, PReLU, ELU, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d."""
    torch, nn, F = _nn()
    model = nn.Sequential(
        nn.Conv1d(1, 16, 9, stride=2, padding=4), nn.GroupNorm(4, 16), nn.PReLU(16), nn.MaxPool1d(2),
        nn.Conv1d(16, 32, 5, padding=2, dilation=1), nn.GroupNorm(8, 32), nn.ELU(), nn.AvgPool1d(2),
        nn.Conv1d(32, 32, 3, padding=2, dilation=2), nn.BatchNorm1d(32), nn.SiLU(),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, NUM_CLASSES))
    return model, torch.randn(BATCH, 1, 400, generator=gen)


def unet_mini(gen):
    """An encoder-decoder: InstanceNorm2d, LeakyReLU, strided Conv2d down, ConvTranspose2d and bilinear
    interpolation up, skip connections by concatenation; the segmentation map is averaged for the head."""
    torch, nn, F = _nn()

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.InstanceNorm2d(o, affine=True), nn.LeakyReLU(0.2))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1, self.e2 = block(3, 8), block(8, 16)
            self.down = nn.Conv2d(16, 16, 3, stride=2, padding=1)
            self.mid = block(16, 32)
            self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
            self.d1 = block(32, 16)
            self.d2 = block(16 + 8, 8)
            self.seg = nn.Conv2d(8, NUM_CLASSES, 1)

        def forward(self, x):
            a = self.e1(x)
            b = self.e2(F.max_pool2d(a, 2))
            c = self.mid(self.down(b))
            d = self.d1(torch.cat([self.up(c), b], dim=1))
            d = F.interpolate(d, scale_factor=2, mode="bilinear", align_corners=False)
            return self.seg(self.d2(torch.cat([d, a], dim=1))).mean(dim=(2, 3))

    return M(), torch.randn(BATCH, 3, 32, 32, generator=gen)


def pixel_shuffle_sr(gen):
    """Super-resolution style: PixelUnshuffle, Conv2d, PixelShuffle, Hardtanh, nearest upsampling."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.unshuffle = nn.PixelUnshuffle(2)
            self.c1 = nn.Conv2d(12, 32, 3, padding=1)
            self.c2 = nn.Conv2d(32, 12, 3, padding=1)
            self.shuffle = nn.PixelShuffle(2)
            self.c3 = nn.Conv2d(3, 8, 3, padding=1)
            self.head = nn.Linear(8, NUM_CLASSES)

        def forward(self, x):
            y = self.shuffle(self.c2(F.hardtanh(self.c1(self.unshuffle(x)), -2.0, 2.0)))
            y = F.interpolate(y + x, scale_factor=2, mode="nearest")
            return self.head(torch.tanh(self.c3(y)).mean(dim=(2, 3)))

    return M(), torch.randn(BATCH, 3, 16, 16, generator=gen)


def mlp_activations(gen):
    """An MLP through the activations of torch.nn beyond ReLU: Softplus, Mish, SELU, CELU, LogSigmoid,
    Softsign, Tanhshrink, Hardswish, ReLU6, exact GELU."""
    torch, nn, F = _nn()
    acts = [nn.Softplus(), nn.Mish(), nn.SELU(), nn.CELU(0.5), nn.LogSigmoid(), nn.Softsign(),
            nn.Tanhshrink(), nn.Hardswish(), nn.ReLU6(), nn.GELU()]
    layers = [nn.Linear(32, 48)]
    for a in acts:
        layers += [a, nn.Linear(48, 48)]
    layers += [nn.Linear(48, NUM_CLASSES)]
    return nn.Sequential(*layers), torch.randn(BATCH, 32, generator=gen)


def einsum_attention(gen):
    """Attention written with torch.einsum, RMS normalization (pow/mean/rsqrt), a learned gate."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=32, h=4):
            super().__init__()
            self.h = h
            self.inp = nn.Linear(8, d)
            self.qkv = nn.Linear(d, 3 * d)
            self.g = nn.Parameter(torch.ones(d))
            self.out = nn.Linear(d, NUM_CLASSES)

        def forward(self, x):
            x = self.inp(x)
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.g
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).unbind(2)
            att = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // self.h)
            y = torch.einsum("bhqk,bkhd->bqhd", att.softmax(-1), v).reshape(b, t, d)
            return self.out(y.amax(dim=1))

    return M(), torch.randn(BATCH, SEQ, 8, generator=gen)


def tensor_functions(gen):
    """Tensor functions in the forward pass: cumsum, flip, roll, >=/<=, logical and, where, clamp, var,
    amin, logsumexp, norm, abs, sqrt, sum over several axes."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(24, 24)
            self.b = nn.Linear(24 * 3 + 2, NUM_CLASSES)

        def forward(self, x):
            h = self.a(x)
            c = torch.cumsum(h, dim=1) / 8.0
            f = torch.flip(h, dims=[1]) + torch.roll(h, shifts=3, dims=1)
            keep = (h >= -0.5) & (h <= 0.5)
            g = torch.where(keep, h, torch.clamp(h, min=-1.0, max=1.0) * 0.5)
            stats = torch.stack([h.var(dim=1), torch.logsumexp(h, dim=1)], dim=1)
            z = torch.cat([c, f.abs().sqrt() - h.amin(dim=1, keepdim=True),
                           g / (g.norm(dim=1, keepdim=True) + 1e-3), stats], dim=1)
            return self.b(z)

    return M(), torch.randn(BATCH, 24, generator=gen)


def conv3d_video(gen):
    """A clip classifier: Conv3d, BatchNorm3d, MaxPool3d, AdaptiveAvgPool3d, Hardsigmoid gate."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv3d(3, 8, 3, padding=1)
            self.bn1 = nn.BatchNorm3d(8)
            self.c2 = nn.Conv3d(8, 16, (1, 3, 3), padding=(0, 1, 1), stride=(1, 2, 2))
            self.bn2 = nn.BatchNorm3d(16)
            self.gate = nn.Linear(16, 16)
            self.head = nn.Linear(16, NUM_CLASSES)

        def forward(self, x):
            y = F.max_pool3d(F.relu(self.bn1(self.c1(x))), (1, 2, 2))
            y = F.adaptive_avg_pool3d(F.relu(self.bn2(self.c2(y))), 1).flatten(1)
            return self.head(y * F.hardsigmoid(self.gate(y)))

    return M(), torch.randn(BATCH, 3, 4, 16, 16, generator=gen)


def r2plus1d_video(gen):
    """torchvision's R(2+1)D-18 video classifier: (2+1)-D factored Conv3d ((1, 3, 3) then (3, 1, 1)),
    BatchNorm3d, a strided 3-D downsampling shortcut, AdaptiveAvgPool3d; a 4-frame 32x32 clip."""
    torch, nn, F = _nn()
    import torchvision
    model = torchvision.models.video.r2plus1d_18(weights=None, num_classes=NUM_CLASSES)
    return model, torch.randn(BATCH, 3, 4, 32, 32, generator=gen)


def mc3_video(gen):
    """torchvision's MC3-18 video classifier: 3-D convolutions in the first block, then (1, 3, 3) ones,
    BatchNorm3d, AdaptiveAvgPool3d; a 4-frame 32x32 clip."""
    torch, nn, F = _nn()
    import torchvision
    model = torchvision.models.video.mc3_18(weights=None, num_classes=NUM_CLASSES)
    return model, torch.randn(BATCH, 3, 4, 32, 32, generator=gen)


def transformer_seq2seq(gen):
    """nn.Transformer (1 encoder and 1 decoder layer, ReLU) on float sequences with a causal target mask;
    the decoder's output averaged over time -> Linear."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.inp = nn.Linear(8, d)
            self.tf = nn.Transformer(d, 4, 1, 1, 64, dropout=0.0, batch_first=True)
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, x):
            s = self.inp(x)
            t = s.shape[1]
            mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
            return self.head(self.tf(s, s, tgt_mask=mask).mean(dim=1))

    return M(), torch.randn(BATCH, SEQ, 8, generator=gen)


def lraspp_mobilenet_v3(gen):
    """torchvision's LR-ASPP segmentation model (MobileNetV3-Large backbone): its logits map averaged."""
    torch, nn, F = _nn()
    import torchvision

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torchvision.models.segmentation.lraspp_mobilenet_v3_large(
                weights=None, weights_backbone=None, num_classes=NUM_CLASSES)

        def forward(self, x):
            return self.net(x)["out"].mean(dim=(2, 3))

    return M(), torch.randn(BATCH, 3, 64, 64, generator=gen)


def deeplabv3_mobilenet_v3(gen):
    """torchvision's DeepLabV3 (ASPP with atrous convolutions, MobileNetV3-Large backbone), averaged."""
    torch, nn, F = _nn()
    import torchvision

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
                weights=None, weights_backbone=None, num_classes=NUM_CLASSES, aux_loss=False)

        def forward(self, x):
            return self.net(x)["out"].mean(dim=(2, 3))

    return M(), torch.randn(BATCH, 3, 64, 64, generator=gen)


def resnet18_fpn(gen):
    """torchvision's ResNet-18 FPN detection backbone (nearest upsampling, lateral 1x1 convs, extra
    max-pool level): the mean of every pyramid level, concatenated -> Linear."""
    torch, nn, F = _nn()
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fpn = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
            self.head = nn.Linear(5 * self.fpn.out_channels, NUM_CLASSES)

        def forward(self, x):
            return self.head(torch.cat([v.mean(dim=(2, 3)) for v in self.fpn(x).values()], dim=1))

    return M(), torch.randn(BATCH, 3, 64, 64, generator=gen)


def cbam_cnn(gen):
    """A CNN with CBAM attention: channel attention from adaptive average and max pooling through a
    shared MLP, spatial attention from the mean and max over channels (torch.max(dim) -> values)."""
    torch, nn, F = _nn()

    class CBAM(nn.Module):
        def __init__(self, c, r=4):
            super().__init__()
            self.mlp = nn.Sequential(nn.Conv2d(c, c // r, 1), nn.ReLU(), nn.Conv2d(c // r, c, 1))
            self.spatial = nn.Conv2d(2, 1, 7, padding=3)

        def forward(self, x):
            a = self.mlp(F.adaptive_avg_pool2d(x, 1)) + self.mlp(F.adaptive_max_pool2d(x, 1))
            x = x * torch.sigmoid(a)
            s = torch.cat([x.mean(dim=1, keepdim=True), torch.max(x, dim=1, keepdim=True)[0]], dim=1)
            return x * torch.sigmoid(self.spatial(s))

    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), CBAM(16),
                          nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(), CBAM(32),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, NUM_CLASSES))
    return model, torch.randn(BATCH, 3, 32, 32, generator=gen)


def stn_classifier(gen):
    """The PyTorch tutorial's spatial transformer: a localization net predicts a 2x3 affine matrix
    (initialized to the identity), F.affine_grid and F.grid_sample resample the input."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.Sequential(nn.Conv2d(1, 8, 5), nn.MaxPool2d(2), nn.ReLU(), nn.Conv2d(8, 10, 5),
                                     nn.MaxPool2d(2), nn.ReLU())
            self.fc_loc = nn.Sequential(nn.Linear(10 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 6))
            self.fc_loc[2].weight.data.normal_(0, 0.01)
            self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
            self.cls = nn.Sequential(nn.Conv2d(1, 8, 5), nn.MaxPool2d(2), nn.ReLU(), nn.Flatten(),
                                     nn.Linear(8 * 12 * 12, NUM_CLASSES))

        def forward(self, x):
            theta = self.fc_loc(self.loc(x).flatten(1)).view(-1, 2, 3)
            grid = F.affine_grid(theta, x.size(), align_corners=False)
            return self.cls(F.grid_sample(x, grid, align_corners=False))

    return M(), torch.randn(BATCH, 1, 28, 28, generator=gen)


def numel_norms(gen):
    """Normalizations written by hand: x.numel()-based means, std with unbiased=False, F.normalize,
    clamp_min, and a RMS norm; sqrt/rsqrt/pow along the way."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(16, 32)
            self.b = nn.Linear(32, NUM_CLASSES)
            self.g = nn.Parameter(torch.ones(32))

        def forward(self, x):
            h = self.a(x)
            h = (h - h.sum() / h.numel()) / h.std(dim=1, unbiased=False, keepdim=True).clamp_min(1e-5)
            h = F.normalize(h, dim=1) * self.g
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.b(F.gelu(h))

    return M(), torch.randn(BATCH, 16, generator=gen)


def clip_text_pool(gen):
    """A CLIP-style text encoder head: token embeddings through a transformer block, the feature at
    each sequence's end-of-text token (argmax of the ids) picked with advanced indexing, then
    torch.gather of per-class prototype scores and an L1 norm."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, d)
            self.block = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
            self.proj = nn.Linear(d, 16)
            self.head = nn.Linear(16, NUM_CLASSES)

        def forward(self, ids):
            h = self.block(self.emb(ids))
            eot = h[torch.arange(h.shape[0]), ids.argmax(dim=-1)]
            z = self.proj(eot)
            z = z / (z.abs().sum(dim=1, keepdim=True) + 1e-6)
            idx = torch.argsort(z, dim=1)[:, :4]
            top = torch.gather(z, 1, idx)
            return self.head(z) + top.sum(dim=1, keepdim=True)

    return M(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def llama_mini(gen):
    """A Llama-style decoder: nn.RMSNorm, rotary position embeddings computed in forward,
    F.scaled_dot_product_attention with is_causal and grouped-query heads (enable_gqa: 4 query heads
    share 2 key/value heads), a SwiGLU MLP (F.silu), the last token -> Linear. At opset 23 the dynamo
    exporter writes Attention and RMSNormalization nodes."""
    torch, nn, F = _nn()

    def rotate(x, cos, sin):
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)

    class Block(nn.Module):
        def __init__(self, d, hq, hkv):
            super().__init__()
            self.hq, self.hkv, self.hd = hq, hkv, d // hq
            self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
            self.q = nn.Linear(d, d, bias=False)
            self.kv = nn.Linear(d, 2 * hkv * self.hd, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.gate, self.up = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
            self.down = nn.Linear(2 * d, d, bias=False)

        def forward(self, x, cos, sin):
            b, t, d = x.shape
            h = self.n1(x)
            q = self.q(h).view(b, t, self.hq, self.hd).transpose(1, 2)
            k, v = self.kv(h).view(b, t, 2, self.hkv, self.hd).permute(2, 0, 3, 1, 4)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class M(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.hd = d // 4
            self.emb = nn.Embedding(VOCAB, d)
            self.blocks = nn.ModuleList([Block(d, 4, 2), Block(d, 4, 2)])
            self.norm = nn.RMSNorm(d)
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, ids):
            t = ids.shape[1]
            inv = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
            ang = torch.arange(t, dtype=torch.float32).unsqueeze(1) * inv
            cos, sin = ang.cos(), ang.sin()
            x = self.emb(ids)
            for blk in self.blocks:
                x = blk(x, cos, sin)
            return self.head(self.norm(x)[:, -1])

    return M(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def bert_padding_mask(gen):
    """A BERT-style encoder over padded token ids: the key padding mask is made in forward from the
    ids (id 0 = padding; the example batch has padded tails) and passed to
    F.scaled_dot_product_attention as a boolean attn_mask; GroupNorm over a conv branch; a masked
    mean pool -> Linear."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=32, h=4):
            super().__init__()
            self.h, self.hd = h, d // h
            self.emb, self.pos = nn.Embedding(VOCAB, d), nn.Parameter(torch.randn(SEQ, d) * 0.02)
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.conv, self.gn = nn.Conv1d(d, d, 3, padding=1), nn.GroupNorm(4, d)
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, ids):
            b, t = ids.shape
            keep = ids != 0                                            # [b, t]
            x = self.emb(ids) + self.pos[:t]
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
            x = x + self.o(a.transpose(1, 2).reshape(b, t, -1))
            x = x + F.gelu(self.gn(self.conv(self.ln2(x).transpose(1, 2)))).transpose(1, 2)
            w = keep.unsqueeze(-1).to(x.dtype)
            return self.head((x * w).sum(1) / w.sum(1))

    ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=gen)
    ids[0, SEQ - 5:] = 0
    ids[1, SEQ - 2:] = 0
    return M(), ids


def shrink_pool_onehot(gen):
    """A small CNN with AdaptiveMaxPool2d(1) beside the average pool, Hardshrink, Softshrink, Softsign,
    Tanhshrink, an L1 norm (torch.linalg.vector_norm ord=1) and a one-hot of the arg-max class mixed
    back into the logits (F.one_hot), as TorchScript writes them: GlobalMaxPool, Shrink, Softsign,
    ReduceL1, OneHot."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)
            self.head = nn.Linear(32, NUM_CLASSES)
            self.mix = nn.Parameter(torch.tensor(0.1))

        def forward(self, x):
            h = F.hardshrink(self.conv1(x), 0.05)
            h = F.softsign(self.conv2(F.softshrink(h, 0.02))) + F.tanhshrink(h)
            pooled = torch.cat([F.adaptive_max_pool2d(h, 1), F.adaptive_avg_pool2d(h, 1)], 1).flatten(1)
            pooled = pooled / (torch.linalg.vector_norm(pooled, ord=1, dim=1, keepdim=True) + 1e-3)
            logits = self.head(pooled)
            return logits + self.mix * F.one_hot(logits.argmax(1), NUM_CLASSES).to(logits.dtype)

    return M(), torch.randn(BATCH, 3, 16, 16, generator=gen)


def trig_features(gen):
    """Features through the trigonometric and hyperbolic functions torch code reaches for (angle and
    range squashing): tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, and a rounded gate
    (torch.round, no gradient) in an MLP."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(d, d), nn.Linear(6 * d, 32)
            self.head = nn.Linear(32, NUM_CLASSES)

        def forward(self, x):
            h = torch.tanh(self.fc1(x)) * 0.9                     # inside (-1, 1)
            feats = [torch.asin(h), torch.acos(h), torch.atanh(h), torch.atan(3 * h) + torch.tan(h),
                     torch.sinh(h) - torch.cosh(h) + torch.asinh(2 * h),
                     torch.acosh(1.5 + h * h) * torch.round(2 * h.detach())]
            return self.head(F.relu(self.fc2(torch.cat(feats, dim=1))))

    return M(), torch.randn(BATCH, 32, generator=gen)


def graph_scatter(gen):
    """A message-passing graph net on a fixed 8-node graph: messages gathered at the edges' sources,
    summed at their targets with scatter_add (ScatterElements, reduction add), a degree normalization,
    and torch.scatter (reduction none) writing per-node gates into a zero tensor."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=16, nodes=8):
            super().__init__()
            g = torch.Generator().manual_seed(7)
            self.register_buffer("src", torch.randint(0, nodes, (24,), generator=g))
            self.register_buffer("dst", torch.randint(0, nodes, (24,), generator=g))
            self.msg, self.upd = nn.Linear(d, d), nn.Linear(2 * d, d)
            self.gate = nn.Linear(d, 1)
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, x):                                     # [B, nodes, d]
            b, n, d = x.shape
            m = torch.relu(self.msg(x[:, self.src]))              # [B, E, d]
            idx = self.dst.view(1, -1, 1).expand(b, -1, d)
            agg = torch.zeros_like(x).scatter_add(1, idx, m)
            deg = torch.zeros(n, dtype=x.dtype).scatter_add(0, self.dst, torch.ones_like(self.dst, dtype=x.dtype))
            h = torch.relu(self.upd(torch.cat([x, agg / (deg.view(1, n, 1) + 1)], dim=-1)))
            order = torch.arange(n).flip(0).view(1, n, 1).expand(b, n, 1)
            gates = torch.zeros(b, n, 1, dtype=x.dtype).scatter(1, order, torch.sigmoid(self.gate(h)))
            return self.head((h * gates).mean(1))

    return M(), torch.randn(BATCH, 8, 16, generator=gen)


def fold_patch_mixer(gen):
    """Patch-space layers between F.unfold and F.fold (Col2Im): overlapping 3x3 patches mixed by a
    Linear and folded back (each pixel sums the patches covering it), then non-overlapping 2x2 patches
    re-tiled into an image as MAE's unpatchify does; BatchNorm and ReLU between."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, c=8):
            super().__init__()
            self.stem = nn.Conv2d(3, c, 3, padding=1)
            self.mix = nn.Linear(c * 9, c * 9)
            self.bn = nn.BatchNorm2d(c)
            self.tile = nn.Linear(c * 4, c * 4)
            self.head = nn.Linear(c, NUM_CLASSES)

        def forward(self, x):
            h = torch.relu(self.stem(x))                              # [B, c, 16, 16]
            p = F.unfold(h, 3, padding=1)                             # [B, 9c, 256]
            h = F.fold(self.mix(p.transpose(1, 2)).transpose(1, 2), (16, 16), 3, padding=1)
            h = torch.relu(self.bn(h))
            p = F.unfold(h, 2, stride=2)                              # [B, 4c, 64]
            h = F.fold(self.tile(p.transpose(1, 2)).transpose(1, 2), (16, 16), 2, stride=2)
            return self.head(h.mean(dim=(2, 3)))

    return M(), torch.randn(BATCH, 3, 16, 16, generator=gen)


def lrn_alexnet(gen):
    """AlexNet as first published, shrunk: local response normalization after the first two convolutions
    (the TorchScript export writes F.local_response_norm with a shape-checked squeeze, an If) and
    overlapping 3x3 / stride 2 max pooling."""
    torch, nn, F = _nn()
    model = nn.Sequential(nn.Conv2d(3, 16, 5, stride=2, padding=2), nn.ReLU(), nn.LocalResponseNorm(5, k=2.0),
                          nn.MaxPool2d(3, 2), nn.Conv2d(16, 24, 3, padding=1), nn.ReLU(),
                          nn.LocalResponseNorm(5, k=2.0), nn.MaxPool2d(3, 2), nn.Flatten(),
                          nn.Linear(24 * 3 * 3, 32), nn.ReLU(), nn.Linear(32, NUM_CLASSES))
    return model, torch.randn(BATCH, 3, 32, 32, generator=gen)


def embedding_bag_text(gen):
    """A fastText-style classifier: nn.EmbeddingBag (mean of each row's token embeddings, and a sum bag
    of bigram hashes) -> Linear. TorchScript writes each bag as a Loop over the bags, the dynamo exporter
    as a while-loop that builds a sequence; amptrain unrolls both at import."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.words = nn.EmbeddingBag(VOCAB, 24, mode="mean")
            self.bigrams = nn.EmbeddingBag(64, 24, mode="sum")
            self.head = nn.Linear(24, NUM_CLASSES)

        def forward(self, tokens):                                 # [B, SEQ] int64
            pairs = (tokens[:, 1:] * 31 + tokens[:, :-1]) % 64
            return self.head(torch.tanh(self.words(tokens) + 0.1 * self.bigrams(pairs)))

    return M(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def style_transfer(gen):
    """A fast-style-transfer image net (Johnson et al.): ReflectionPad2d before every convolution,
    InstanceNorm2d with affine parameters, strided down-sampling, residual blocks, nearest up-sampling
    with ReplicationPad2d and a zero ConstantPad2d, Tanh; a pooled Linear head. ONNX: Pad in reflect,
    edge and constant modes, InstanceNormalization, Resize."""
    torch, nn, F = _nn()

    def conv(cin, cout, k, stride=1):
        return nn.Sequential(nn.ReflectionPad2d(k // 2), nn.Conv2d(cin, cout, k, stride),
                             nn.InstanceNorm2d(cout, affine=True), nn.ReLU())

    class Residual(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.a, self.b = conv(c, c, 3), nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3),
                                                          nn.InstanceNorm2d(c, affine=True))

        def forward(self, x):
            return x + self.b(self.a(x))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.Sequential(conv(3, 8, 5), conv(8, 16, 3, 2))
            self.res = nn.Sequential(Residual(16), Residual(16))
            self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.ReplicationPad2d(1),
                                    nn.Conv2d(16, 8, 3), nn.ReLU(), nn.ConstantPad2d((1, 1, 1, 1), 0.0),
                                    nn.Conv2d(8, 3, 3))
            self.head = nn.Linear(3, NUM_CLASSES)

        def forward(self, x):
            y = torch.tanh(self.up(self.res(self.down(x))))
            return self.head(y.mean(dim=(2, 3)))

    return M(), torch.randn(BATCH, 3, 16, 16, generator=gen)


def tcn_weight_norm(gen):
    """A temporal convolutional network: Conv1d layers under torch.nn.utils.parametrizations.weight_norm
    (the weight computed in forward from g and v: a norm over all but the first axis), causal dilated
    convolutions padded on the left with F.pad, gated linear units (F.glu), residual 1x1 convolutions;
    the last step into a Linear head."""
    torch, nn, F = _nn()
    wn = torch.nn.utils.parametrizations.weight_norm

    class Block(nn.Module):
        def __init__(self, cin, c, dilation):
            super().__init__()
            self.pad = 2 * dilation
            self.conv = wn(nn.Conv1d(cin, 2 * c, 3, dilation=dilation))
            self.skip = wn(nn.Conv1d(cin, c, 1)) if cin != c else None

        def forward(self, x):
            y = F.glu(self.conv(F.pad(x, (self.pad, 0))), dim=1)
            return y + (self.skip(x) if self.skip is not None else x)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(Block(4, 16, 1), Block(16, 16, 2), Block(16, 16, 4))
            self.head = nn.Linear(16, NUM_CLASSES)

        def forward(self, x):
            return self.head(self.blocks(x)[:, :, -1])

    return M(), torch.randn(BATCH, 4, 32, generator=gen)


def moe_mini(gen):
    """A mixture-of-experts text classifier (top-2 routing as in Mixtral): a softmax router, torch.topk of
    its probabilities renormalized, every expert's MLP computed and the chosen two gathered with
    torch.gather and mixed by their weights, a load-balancing style mean of the router probabilities
    added to the logits. ONNX: TopK (values differentiated), GatherElements, ReduceSum."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=32, experts=4):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, d)
            self.norm = nn.LayerNorm(d)
            self.router = nn.Linear(d, experts, bias=False)
            self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
                                         for _ in range(experts))
            self.head = nn.Linear(d, NUM_CLASSES)
            self.aux = nn.Linear(experts, NUM_CLASSES, bias=False)

        def forward(self, ids):
            x = self.emb(ids)
            h = self.norm(x)
            probs = self.router(h).softmax(dim=-1)                        # [B, T, E]
            top, idx = torch.topk(probs, 2, dim=-1)                       # [B, T, 2]
            top = top / top.sum(dim=-1, keepdim=True)
            outs = torch.stack([e(h) for e in self.experts], dim=2)       # [B, T, E, d]
            pick = idx.unsqueeze(-1).expand(-1, -1, -1, outs.shape[-1])   # [B, T, 2, d]
            y = (torch.gather(outs, 2, pick) * top.unsqueeze(-1)).sum(dim=2)
            return self.head((x + y).mean(dim=1)) + self.aux(probs.mean(dim=1))

    return M(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def tied_lm(gen):
    """A language model whose output layer is its input embedding (weight tying, as GPT-2 and T5 do):
    one parameter read by the Gather of the tokens and, transposed, by the head's MatMul; nn.MultiheadAttention
    (batch first) with a float causal mask; the last position's vocabulary logits, of which the first
    NUM_CLASSES are the output."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, d)
            self.pos = nn.Parameter(torch.randn(SEQ, d) * 0.1)
            self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, ids):
            t = ids.shape[1]
            x = self.emb(ids) + self.pos[:t]
            mask = torch.full((t, t), float("-inf"), dtype=x.dtype).triu(1)
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            x = x + self.mlp(self.ln2(x))
            logits = x[:, -1] @ self.emb.weight.t()                       # [B, VOCAB], tied
            return logits[:, :NUM_CLASSES]

    return M(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def yolo_mini(gen):
    """A YOLOv5/v8-style detector reduced to a classifier: Conv-BN-SiLU blocks, a C2f-like split
    (Tensor.chunk) and concat, SPPF (three chained stride-1 5x5 max pools, concatenated), a nearest
    2x upsample and concat with the earlier scale, a head reshaped to [B, anchors, 5 + classes] and
    permuted, sigmoid objectness weighting the class scores, pooled over the anchors."""
    torch, nn, F = _nn()

    def cbs(cin, cout, k=3, s=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())

    class C2f(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.cv1, self.m, self.cv2 = cbs(c, c, 1), cbs(c // 2, c // 2), cbs(c + c // 2, c, 1)

        def forward(self, x):
            a, b = self.cv1(x).chunk(2, 1)
            return self.cv2(torch.cat([a, b, self.m(b)], 1))

    class SPPF(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.cv1, self.cv2 = cbs(c, c // 2, 1), cbs(2 * c, c, 1)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            y0 = self.cv1(x)
            y1 = self.pool(y0)
            y2 = self.pool(y1)
            return self.cv2(torch.cat([y0, y1, y2, self.pool(y2)], 1))

    class M(nn.Module):
        def __init__(self, anchors=3):
            super().__init__()
            self.anchors = anchors
            self.stem, self.c1 = cbs(3, 16, 3, 2), C2f(16)
            self.down, self.c2, self.sppf = cbs(16, 32, 3, 2), C2f(32), SPPF(32)
            self.fuse = cbs(48, 16, 1)
            self.detect = nn.Conv2d(16, anchors * (5 + NUM_CLASSES), 1)

        def forward(self, x):
            p3 = self.c1(self.stem(x))
            p4 = self.sppf(self.c2(self.down(p3)))
            y = self.detect(self.fuse(torch.cat([F.interpolate(p4, scale_factor=2.0, mode="nearest"), p3], 1)))
            b, _, h, w = y.shape
            y = y.view(b, self.anchors, 5 + NUM_CLASSES, h, w).permute(0, 1, 3, 4, 2).reshape(b, -1, 5 + NUM_CLASSES)
            scores = torch.sigmoid(y[..., 4:5]) * y[..., 5:]
            return scores.mean(dim=1)

    return M(), torch.randn(BATCH, 3, 32, 32, generator=gen)


def padding_mode_convs(gen):
    """Conv2d with padding_mode 'circular', 'reflect' and 'replicate' (as in physics and style-transfer
    nets; PyTorch pads then convolves, so the exports write a Pad or slices and a Concat before the
    Conv), and a ConvTranspose2d with output_padding and dilation."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.circ = nn.Conv2d(3, 8, 3, padding=1, padding_mode="circular")
            self.refl = nn.Conv2d(8, 8, 3, padding=2, dilation=2, padding_mode="reflect")
            self.repl = nn.Conv2d(8, 8, 5, stride=2, padding=2, padding_mode="replicate")
            self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1, dilation=1)
            self.head = nn.Linear(4, NUM_CLASSES)

        def forward(self, x):
            y = self.up(F.gelu(self.repl(F.gelu(self.refl(torch.tanh(self.circ(x)))))))
            return self.head(y.mean(dim=(2, 3)))

    return M(), torch.randn(BATCH, 3, 12, 12, generator=gen)


def unet3d_mini(gen):
    """A volumetric segmentation net: Conv3d with GroupNorm and LeakyReLU, a strided Conv3d down,
    ConvTranspose3d up, trilinear F.interpolate, skip concatenation, a 1x1x1 classifier averaged."""
    torch, nn, F = _nn()

    def block(cin, cout, stride=1):
        return nn.Sequential(nn.Conv3d(cin, cout, 3, stride, 1), nn.GroupNorm(2, cout), nn.LeakyReLU(0.01))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc, self.down = block(2, 8), block(8, 16, 2)
            self.up = nn.ConvTranspose3d(16, 8, 2, stride=2)
            self.dec = block(16, 8)
            self.side = nn.Conv3d(16, 4, 1)
            self.cls = nn.Conv3d(12, NUM_CLASSES, 1)

        def forward(self, x):
            e = self.enc(x)
            d = self.down(e)
            y = self.dec(torch.cat([self.up(d), e], 1))
            s = F.interpolate(self.side(d), scale_factor=2.0, mode="trilinear", align_corners=False)
            return self.cls(torch.cat([y, s], 1)).mean(dim=(2, 3, 4))

    return M(), torch.randn(BATCH, 2, 8, 8, 8, generator=gen)


def metric_heads(gen):
    """Metric-learning heads: distances to learned prototypes with torch.cdist, cosine similarity
    (nn.CosineSimilarity), torch.logsumexp over the prototypes of each class, a bilinear form between two
    embeddings written with torch.einsum (PyTorch exports no nn.Bilinear: aten::bilinear), and a
    LayerNorm over (C, H, W) of a feature map."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=16, per_class=2):
            super().__init__()
            self.per_class = per_class
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.norm = nn.LayerNorm([8, 8, 8])
            self.embed_a, self.embed_b = nn.Linear(8, d), nn.Linear(8, d)
            self.protos = nn.Parameter(torch.randn(NUM_CLASSES * per_class, d))
            self.bilinear = nn.Parameter(torch.randn(NUM_CLASSES, d, d) / d)
            self.cos = nn.CosineSimilarity(dim=-1)

        def forward(self, x):
            h = self.norm(F.relu(self.conv(x))).mean(dim=(2, 3))
            a, b = self.embed_a(h), self.embed_b(h)
            dist = torch.cdist(a, self.protos)                                       # [B, K*P]
            near = torch.logsumexp(-dist.view(-1, NUM_CLASSES, self.per_class), dim=2)
            cos = self.cos(a.unsqueeze(1), self.protos.view(NUM_CLASSES, self.per_class, -1).mean(1).unsqueeze(0))
            return near + cos + 0.1 * torch.einsum("bi,kij,bj->bk", a, self.bilinear, b)

    return M(), torch.randn(BATCH, 3, 8, 8, generator=gen)


def pooling_variants(gen):
    """Pooling beyond the classifiers' defaults: MaxPool2d with dilation and ceil_mode, AvgPool2d with
    ceil_mode and count_include_pad=False, LPPool2d, AdaptiveAvgPool2d and AdaptiveMaxPool2d to output
    sizes that do not divide the input, and a depthwise convolution with a channel multiplier of 2."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.dw = nn.Conv2d(8, 16, 3, padding=1, groups=8)
            self.maxp = nn.MaxPool2d(3, stride=2, dilation=2, ceil_mode=True)
            self.avgp = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
            self.lpp = nn.LPPool2d(2, 2)
            self.head = nn.Linear(16 * (15 + 6), NUM_CLASSES)

        def forward(self, x):
            h = F.relu(self.dw(F.relu(self.conv(x))))
            a = F.adaptive_avg_pool2d(self.avgp(h), (3, 5)).flatten(1)
            b = F.adaptive_max_pool2d(self.lpp(self.maxp(h) + 1.0), (2, 3)).flatten(1)
            return self.head(torch.cat([a, b], 1))

    return M(), torch.randn(BATCH, 3, 19, 17, generator=gen)


def alibi_encoder(gen):
    """A text encoder with ALiBi attention (a linear distance bias built in forward from arange,
    per-head slopes), a sort-based pooling (torch.sort of the token scores, the top half averaged),
    torch.var_mean and torch.amax over two dims, Clip with tensor bounds, Softmin and LogSigmoid."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=32, h=4):
            super().__init__()
            self.h = h
            self.emb = nn.Embedding(VOCAB, d)
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.score = nn.Linear(d, 1)
            self.lo, self.hi = nn.Parameter(torch.tensor(-1.5)), nn.Parameter(torch.tensor(1.5))
            self.head = nn.Linear(d + 3, NUM_CLASSES)
            self.register_buffer("slopes", 2.0 ** (-8.0 * torch.arange(1, h + 1) / h))

        def forward(self, ids):
            b, t = ids.shape
            x = self.emb(ids)
            q, k, v = self.qkv(x).view(b, t, 3, self.h, -1).permute(2, 0, 3, 1, 4)
            pos = torch.arange(t)
            bias = -(pos[None, :] - pos[:, None]).abs().to(x.dtype) * self.slopes.view(-1, 1, 1)
            att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1]) + bias
            x = x + self.out((att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, -1))
            scores = self.score(x).squeeze(-1)                                   # [B, T]
            order = torch.sort(scores, dim=1, descending=True).indices[:, : t // 2]
            pooled = torch.gather(x, 1, order.unsqueeze(-1).expand(-1, -1, x.shape[-1])).mean(1)
            var, mean = torch.var_mean(x, dim=(1, 2), keepdim=False)
            peak = torch.amax(x, dim=(1, 2))
            pooled = torch.clamp(pooled, self.lo, self.hi)
            stats = torch.stack([var, mean, peak], 1)
            return self.head(torch.cat([pooled, F.logsigmoid(stats)], 1)) + F.softmin(stats, 1).sum(1, keepdim=True)

    return M(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def spectral_norm_critic(gen):
    """A GAN critic (SN-GAN): Conv2d and Linear under torch.nn.utils.parametrizations.spectral_norm (in
    training mode each forward runs a power-iteration step on u and v buffers; the weight is divided by
    the estimated largest singular value), LeakyReLU(0.2), no normalization layer."""
    torch, nn, F = _nn()
    sn = torch.nn.utils.parametrizations.spectral_norm

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = sn(nn.Conv2d(3, 16, 4, 2, 1)), sn(nn.Conv2d(16, 32, 4, 2, 1))
            self.fc = sn(nn.Linear(32 * 4 * 4, NUM_CLASSES))

        def forward(self, x):
            h = F.leaky_relu(self.c2(F.leaky_relu(self.c1(x), 0.2)), 0.2)
            return self.fc(h.flatten(1))

    return M(), torch.randn(BATCH, 3, 16, 16, generator=gen)


def crnn_ocr(gen):
    """A CRNN text-line recognizer reduced to a classifier: a conv stack that pools the height away,
    the width as time in sequence-first layout (permute to [T, B, C]) through a 2-layer bidirectional
    nn.LSTM (batch_first=False), the time steps averaged into a Linear head."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.cnn = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d((2, 2)),
                                     nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                     nn.MaxPool2d((2, 1)), nn.AdaptiveAvgPool2d((1, None)))
            self.rnn = nn.LSTM(32, 24, num_layers=2, bidirectional=True)
            self.head = nn.Linear(48, NUM_CLASSES)

        def forward(self, x):
            f = self.cnn(x).squeeze(2).permute(2, 0, 1)                   # [T, B, C]
            y, _ = self.rnn(f)
            return self.head(y.mean(dim=0))

    return M(), torch.randn(BATCH, 1, 16, 24, generator=gen)


def pixelcnn_masked(gen):
    """PixelCNN-style masked convolutions: the weight multiplied by a fixed causal mask (a buffer) in
    forward before F.conv2d, gated activations (tanh * sigmoid of the two channel halves), a 1x1
    residual, and a classifier on the pooled features."""
    torch, nn, F = _nn()

    class Masked(nn.Conv2d):
        def __init__(self, cin, cout, k, first):
            super().__init__(cin, cout, k, padding=k // 2)
            mask = torch.ones_like(self.weight)
            mask[:, :, k // 2, k // 2 + (0 if first else 1):] = 0
            mask[:, :, k // 2 + 1:] = 0
            self.register_buffer("mask", mask)

        def forward(self, x):
            return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Masked(3, 32, 5, True)
            self.b = Masked(16, 32, 3, False)
            self.res = nn.Conv2d(16, 16, 1)
            self.head = nn.Linear(16, NUM_CLASSES)

        def forward(self, x):
            def gate(h):
                u, v = h.chunk(2, 1)
                return torch.tanh(u) * torch.sigmoid(v)
            h = gate(self.a(x))
            h = h + self.res(gate(self.b(h)))
            return self.head(h.mean(dim=(2, 3)))

    return M(), torch.randn(BATCH, 3, 12, 12, generator=gen)


def mha_variants(gen):
    """nn.MultiheadAttention beyond self-attention: cross-attention with kdim/vdim different from
    embed_dim (separate q/k/v projection weights), add_bias_kv and add_zero_attn (a learned key/value
    row and a zero row appended), a boolean key_padding_mask, averaged attention weights returned
    (need_weights=True) and mixed into the output."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.q_emb = nn.Embedding(VOCAB, d)
            self.mem = nn.Linear(6, 20)
            self.attn = nn.MultiheadAttention(d, 4, kdim=20, vdim=12, add_bias_kv=True, add_zero_attn=True,
                                              batch_first=True)
            self.val = nn.Linear(20, 12)
            self.head = nn.Linear(d + 10, NUM_CLASSES)

        def forward(self, ids):
            b, t = ids.shape
            q = self.q_emb(ids)
            mem = torch.tanh(self.mem(torch.arange(60, dtype=q.dtype).view(1, 10, 6).expand(b, -1, -1) / 60.0))
            pad = torch.arange(10).unsqueeze(0) >= (8 + (ids[:, :1] % 2))  # [B, 10], the last 1-2 padded
            y, w = self.attn(q, mem, self.val(mem), key_padding_mask=pad, need_weights=True)
            return self.head(torch.cat([y.mean(1), w.mean(1)[:, :10]], 1))

    return M(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def bicubic_sr(gen):
    """A super-resolution net: bicubic up-sampling with align_corners=True as the skip path, a learned
    residual through PixelShuffle, Upsample(mode="bilinear", align_corners=True), and a pooled head."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.PReLU(16), nn.Conv2d(16, 12, 3, padding=1),
                                      nn.PixelShuffle(2))
            self.smooth = nn.Upsample(scale_factor=0.5, mode="bilinear", align_corners=True)
            self.head = nn.Linear(3, NUM_CLASSES)

        def forward(self, x):
            up = F.interpolate(x, scale_factor=2.0, mode="bicubic", align_corners=True) + self.body(x)
            return self.head(self.smooth(up).mean(dim=(2, 3)))

    return M(), torch.randn(BATCH, 3, 10, 12, generator=gen)


def conformer_conv(gen):
    """A Conformer block's convolution module on a feature sequence: LayerNorm over the features,
    pointwise Conv1d to 2x channels, GLU, depthwise Conv1d (kernel 7, padding 3), BatchNorm1d, SiLU,
    pointwise Conv1d, residual; a half-step feed-forward (x + 0.5 FFN(x)) before it; mean over time."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=24):
            super().__init__()
            self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
            self.norm = nn.LayerNorm(d)
            self.pw1, self.dw = nn.Conv1d(d, 2 * d, 1), nn.Conv1d(d, d, 7, padding=3, groups=d)
            self.bn, self.pw2 = nn.BatchNorm1d(d), nn.Conv1d(d, d, 1)
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, x):                                  # [B, T, d]
            x = x + 0.5 * self.ff(x)
            h = self.norm(x).transpose(1, 2)                   # [B, d, T]
            h = self.pw2(F.silu(self.bn(self.dw(F.glu(self.pw1(h), dim=1)))))
            return self.head((x + h.transpose(1, 2)).mean(dim=1))

    return M(), torch.randn(BATCH, 20, 24, generator=gen)


def grucell_decoder(gen):
    """A decoder unrolled in forward with nn.GRUCell and nn.LSTMCell (teacher forcing over 6 steps),
    attention over encoder states with torch.bmm and torch.baddbmm (alpha/beta), logits from the
    last step."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=16):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, d)
            self.enc = nn.Linear(d, d)
            self.gru, self.lstm = nn.GRUCell(2 * d, d), nn.LSTMCell(d, d)
            self.bias = nn.Parameter(torch.zeros(1, 1, SEQ))
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, ids):
            e = self.emb(ids)
            mem = torch.tanh(self.enc(e))                            # [B, T, d]
            h = mem.mean(1)
            c = torch.zeros_like(h)
            y = h
            for t in range(6):
                scores = torch.baddbmm(self.bias.expand(h.shape[0], -1, -1), h.unsqueeze(1), mem.transpose(1, 2),
                                       beta=0.5, alpha=0.25)         # [B, 1, T]
                ctx = torch.bmm(scores.softmax(-1), mem).squeeze(1)
                h = self.gru(torch.cat([e[:, t], ctx], 1), h)
                y, c = self.lstm(h, (y, c))
            return self.head(y)

    return M(), torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def unfold_mixer(gen):
    """Patches with Tensor.unfold on two dims (x.unfold(2, 4, 4).unfold(3, 4, 4)), a token-mixing
    MLP on the transposed patch axis, Hardswish, Softplus(beta=2, threshold=5), and a head."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(3 * 16, 32)
            self.tokens = nn.Linear(16, 16)
            self.softplus = nn.Softplus(beta=2.0, threshold=5.0)
            self.head = nn.Linear(32, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 16, 16]
            p = x.unfold(2, 4, 4).unfold(3, 4, 4)                     # [B, 3, 4, 4, 4, 4]
            p = p.permute(0, 2, 3, 1, 4, 5).reshape(x.shape[0], 16, 48)
            t = F.hardswish(self.embed(p))                            # [B, 16, 32]
            t = t + self.tokens(t.transpose(1, 2)).transpose(1, 2)
            return self.head(self.softplus(t).mean(1))

    return M(), torch.randn(BATCH, 3, 16, 16, generator=gen)


def elementwise_math(gen):
    """Element-wise tensor math that torch code writes inline: atan2, lerp with a tensor weight,
    addcmul, floating remainder and fmod, floor_divide (no gradient), maximum/minimum, nan_to_num.
    (torch.hypot and cummax export with neither exporter. floor_divide reads non-negative values: the
    TorchScript exporter writes it as Div then a Cast to int64, which truncates, so negative quotients
    come out one too high, in ONNX Runtime as in amptrain.)"""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(12, 16)
            self.b = nn.Linear(12, 16)
            self.w = nn.Parameter(torch.rand(16, generator=gen))
            self.head = nn.Linear(16 * 5, NUM_CLASSES)

        def forward(self, x):                                        # [B, 12]
            a, b = self.a(x), self.b(x)
            angle = torch.atan2(a, b)
            mixed = torch.lerp(a, b, torch.sigmoid(self.w))
            prod = torch.addcmul(mixed, a, b, value=0.5)
            wrapped = torch.remainder(a * 3.0, 1.7) + torch.fmod(b * 3.0, 1.3)
            steps = torch.floor_divide(b.detach().abs() * 4.0, 1.0) * 0.1   # see the docstring
            hi = torch.maximum(a, b) - torch.minimum(a, 0.5 * b)
            ratio = torch.nan_to_num(a / (b * b - 0.01), nan=0.0, posinf=1e3, neginf=-1e3)
            feats = torch.cat([angle, prod, wrapped + steps, hi, torch.tanh(ratio)], 1)
            return self.head(feats)

    return M(), torch.randn(BATCH, 12, generator=gen)


def scan_math(gen):
    """Scans and the element-wise functions only the dynamo exporter writes (TorchScript has no
    symbolic for them): torch.diff, logcumsumexp, xlogy, expm1, log1p, frac, over Linear features."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(12, 16)
            self.head = nn.Linear(15 + 16 + 16, NUM_CLASSES)

        def forward(self, x):                                        # [B, 12]
            a = self.a(x)
            run = torch.logcumsumexp(torch.diff(a, dim=1), dim=1)       # [B, 15]
            ent = torch.xlogy(a.abs(), a.abs() + 1.0)
            soft = torch.log1p(torch.expm1(-a.abs())) + torch.frac(a * 2.0)
            return self.head(torch.cat([run, ent, soft], 1))

    return M(), torch.randn(BATCH, 12, generator=gen)


def fnet_mixer(gen):
    """FNet-style token mixing: the real part of a 2-D FFT over (tokens, features) in place of
    attention (torch.fft.fft2(x).real), with LayerNorm, a GELU feed-forward and a mean-pooled head."""
    torch, nn, F = _nn()

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def forward(self, x):
            x = self.n1(x + torch.fft.fft2(x).real)
            return self.n2(x + self.ff(x))

    class M(nn.Module):
        def __init__(self, d=16):
            super().__init__()
            self.embed = nn.Linear(8, d)
            self.blocks = nn.Sequential(Block(d), Block(d))
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, x):                                        # [B, 12, 8]
            return self.head(self.blocks(self.embed(x)).mean(1))

    return M(), torch.randn(BATCH, 12, 8, generator=gen)


def mel_frontend(gen):
    """An audio classifier with its front end in the model: torch.stft (Hann window, hop 16,
    onesided), the power spectrum, a fixed triangular mel filter bank as a MatMul, log(x + eps),
    then Conv2d/BatchNorm/ReLU over (mel, frame) and a pooled head."""
    torch, nn, F = _nn()
    n_fft, hop, mels = 64, 16, 12
    bins = n_fft // 2 + 1
    centers = torch.linspace(0, bins - 1, mels + 2)
    k = torch.arange(bins, dtype=torch.float32)
    fb = torch.stack([torch.clamp(torch.minimum((k - centers[i]) / (centers[i + 1] - centers[i]),
                                                (centers[i + 2] - k) / (centers[i + 2] - centers[i + 1])), min=0)
                      for i in range(mels)], 1)                       # [bins, mels]

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("window", torch.hann_window(n_fft))
            self.register_buffer("fb", fb)
            self.conv = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
            self.head = nn.Linear(8, NUM_CLASSES)

        def forward(self, wave):                                     # [B, 400]
            spec = torch.stft(wave, n_fft, hop_length=hop, window=self.window, center=False,
                              return_complex=False)                  # [B, bins, frames, 2]
            power = spec.pow(2).sum(-1)                               # [B, bins, frames]
            mel = torch.log(torch.matmul(power.transpose(1, 2), self.fb) + 1e-6)   # [B, frames, mels]
            h = self.conv(mel.unsqueeze(1))
            return self.head(h.mean((2, 3)))

    return M(), torch.randn(BATCH, 400, generator=gen)


def convtranspose_variants(gen):
    """Transposed convolutions beyond a stride-2 upsampler: ConvTranspose2d with groups, dilation and
    output_padding, ConvTranspose1d with padding, ConvTranspose3d, and a bias-free one."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.t2 = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=2)
            self.t2b = nn.ConvTranspose2d(6, 4, 2, stride=1, bias=False)
            self.t1 = nn.ConvTranspose1d(4, 4, 5, stride=3, padding=2, output_padding=1)
            self.t3 = nn.ConvTranspose3d(2, 3, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
            self.head = nn.Linear(4 + 4 + 3, NUM_CLASSES)

        def forward(self, x):                                        # [B, 4, 6, 6]
            y = self.t2b(F.leaky_relu(self.t2(x)))
            s = self.t1(x.flatten(2))                                # [B, 4, L]
            v = self.t3(x.view(x.shape[0], 2, 2, 6, 6))
            return self.head(torch.cat([y.mean((2, 3)), s.mean(2), v.mean((2, 3, 4))], 1))

    return M(), torch.randn(BATCH, 4, 6, 6, generator=gen)


def glu_shuffle_heads(gen):
    """Gating and channel plumbing layers: nn.GLU on channels, nn.ChannelShuffle, nn.Unflatten,
    nn.Softmax2d (a spatial attention over channels), nn.Softmin, LogSoftmax over dim 1 of a 4-D map,
    and torch.chunk feeding two heads that are summed."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, padding=1)
            self.glu = nn.GLU(dim=1)
            self.shuffle = nn.ChannelShuffle(2)
            self.mix = nn.Conv2d(8, 8, 1)
            self.unflat = nn.Unflatten(1, (2, 4))
            self.soft2d, self.softmin = nn.Softmax2d(), nn.Softmin(dim=-1)
            self.h1, self.h2 = nn.Linear(4, NUM_CLASSES), nn.Linear(4, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 8, 8]
            h = self.shuffle(self.glu(self.conv(x)))                 # [B, 8, 8, 8]
            a = self.soft2d(self.mix(h)) * h + F.log_softmax(h, dim=1).exp() * 0.1
            g = self.unflat(a.mean((2, 3)))                          # [B, 2, 4]
            g = g * self.softmin(g)
            u, v = torch.chunk(g, 2, dim=1)
            return self.h1(u.squeeze(1)) + self.h2(v.squeeze(1))

    return M(), torch.randn(BATCH, 3, 8, 8, generator=gen)


def lstm_proj_tagger(gen):
    """A recurrent sequence model with the LSTM options the classifiers do not use: proj_size (an
    LSTM with projections), batch_first=False, dropout between layers (inactive in eval), then an
    nn.RNN with tanh over the projected states and the last step's output to a head."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(6, 12, num_layers=2, proj_size=5, dropout=0.1)
            self.rnn = nn.RNN(5, 8, nonlinearity="tanh")
            self.head = nn.Linear(8, NUM_CLASSES)

        def forward(self, x):                                        # [T, B, 6]
            y, _ = self.lstm(x)
            z, _ = self.rnn(y)
            return self.head(z[-1])

    return M(), torch.randn(7, BATCH, 6, generator=gen)


def prenorm_gelu_encoder(gen):
    """nn.TransformerEncoder as configured in newer code: norm_first=True, activation="gelu",
    batch_first=False (sequence-major), a final LayerNorm, a float additive attention mask and a
    key-padding mask (is_causal=False stated, which torch.export needs), and the CLS position's output
    to the head."""
    torch, nn, F = _nn()
    seq = 9

    class M(nn.Module):
        def __init__(self, d=16):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d, 4, 32, dropout=0.0, activation="gelu", norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(d), enable_nested_tensor=False)
            self.embed = nn.Linear(5, d)
            self.cls = nn.Parameter(torch.randn(1, 1, d, generator=gen) * 0.1)
            bias = -0.5 * (torch.arange(seq)[None] - torch.arange(seq)[:, None]).abs().float()
            self.register_buffer("bias", bias)
            pad = torch.zeros(BATCH, seq, dtype=torch.bool)
            pad[1, -2:] = True
            self.register_buffer("pad", pad)
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, x):                                        # [T-1, B, 5]
            h = torch.cat([self.cls.expand(1, x.shape[1], -1), self.embed(x)], 0)
            h = self.enc(h, mask=self.bias, src_key_padding_mask=self.pad, is_causal=False)
            return self.head(h[0])

    return M(), torch.randn(seq - 1, BATCH, 5, generator=gen)


def pointnet_mini(gen):
    """PointNet on a point cloud [B, 3, N]: a T-Net predicting a 3x3 transform (identity added) applied
    with torch.bmm, shared per-point MLPs as Conv1d(k=1) with BatchNorm1d, a max over the points."""
    torch, nn, F = _nn()

    class TNet(nn.Module):
        def __init__(self, k=3):
            super().__init__()
            self.k = k
            self.conv = nn.Sequential(nn.Conv1d(k, 16, 1), nn.BatchNorm1d(16), nn.ReLU())
            self.fc = nn.Linear(16, k * k)

        def forward(self, x):
            m = self.fc(self.conv(x).max(2).values).view(-1, self.k, self.k)
            return m + torch.eye(self.k, dtype=x.dtype)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.tnet = TNet()
            self.mlp = nn.Sequential(nn.Conv1d(3, 16, 1), nn.BatchNorm1d(16), nn.ReLU(),
                                     nn.Conv1d(16, 32, 1), nn.BatchNorm1d(32), nn.ReLU())
            self.head = nn.Linear(32, NUM_CLASSES)

        def forward(self, pts):                                      # [B, 3, N]
            aligned = torch.bmm(self.tnet(pts), pts)
            return self.head(self.mlp(aligned).max(2).values)

    return M(), torch.randn(BATCH, 3, 24, generator=gen)


def capsule_routing(gen):
    """Capsules with dynamic routing (3 iterations unrolled): primary capsules from a Conv2d, the squash
    nonlinearity (|s|^2 / (1 + |s|^2) s / |s|), predictions through a learned [in, out, d_out, d_in]
    weight with matmul, routing logits updated by agreement, softmax over the output capsules, and the
    class capsules' lengths as logits."""
    torch, nn, F = _nn()

    def squash(s, dim=-1):
        n2 = (s * s).sum(dim, keepdim=True)
        return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-8)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.prim = nn.Conv2d(3, 8 * 4, 3, stride=2)             # 8 capsules of 4 per position
            self.w = nn.Parameter(0.1 * torch.randn(8 * 9, NUM_CLASSES, 6, 4, generator=gen))

        def forward(self, x):                                        # [B, 3, 7, 7]
            u = self.prim(x)                                         # [B, 32, 3, 3]
            b_ = u.shape[0]
            u = squash(u.view(b_, 8, 4, 9).permute(0, 1, 3, 2).reshape(b_, 72, 4))
            u_hat = torch.matmul(self.w, u[:, :, None, :, None]).squeeze(-1)   # [B, 72, 10, 6]
            logits = torch.zeros(b_, 72, NUM_CLASSES, dtype=x.dtype)
            for _ in range(3):
                c = F.softmax(logits, dim=2)
                v = squash((c.unsqueeze(-1) * u_hat).sum(1))         # [B, 10, 6]
                logits = logits + (u_hat * v.unsqueeze(1)).sum(-1)
            return torch.sqrt((v * v).sum(-1) + 1e-8)

    return M(), torch.randn(BATCH, 3, 7, 7, generator=gen)


def gat_layer(gen):
    """A two-head graph attention layer (GAT) on a fixed 6-node graph: per-edge scores
    LeakyReLU(a . [Wh_i || Wh_j]) built by broadcasting, masked to the adjacency with masked_fill(-inf),
    softmax over neighbours, ELU, then a mean over nodes and heads into the head."""
    torch, nn, F = _nn()
    adj = torch.tensor([[1, 1, 0, 0, 1, 0], [1, 1, 1, 0, 0, 0], [0, 1, 1, 1, 0, 0],
                        [0, 0, 1, 1, 1, 1], [1, 0, 0, 1, 1, 0], [0, 0, 0, 1, 0, 1]], dtype=torch.bool)

    class M(nn.Module):
        def __init__(self, d=8, heads=2):
            super().__init__()
            self.heads, self.d = heads, d
            self.w = nn.Linear(5, heads * d, bias=False)
            self.a_src = nn.Parameter(0.3 * torch.randn(heads, d, generator=gen))
            self.a_dst = nn.Parameter(0.3 * torch.randn(heads, d, generator=gen))
            self.register_buffer("adj", adj)
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, x):                                        # [B, 6 nodes, 5]
            h = self.w(x).view(x.shape[0], 6, self.heads, self.d)    # [B, N, H, D]
            src = (h * self.a_src).sum(-1)                           # [B, N, H]
            dst = (h * self.a_dst).sum(-1)
            e = F.leaky_relu(src.unsqueeze(2) + dst.unsqueeze(1), 0.2)   # [B, N, N, H]
            e = e.masked_fill(~self.adj[None, :, :, None], float("-inf"))
            att = F.softmax(e, dim=2)
            out = F.elu(torch.einsum("bijh,bjhd->bihd", att, h))
            return self.head(out.mean((1, 2)))

    return M(), torch.randn(BATCH, 6, 5, generator=gen)


def dynamic_conv(gen):
    """Input-conditioned convolution weights (hypernetwork / StyleGAN2 modulation): a style vector from
    the pooled input scales a shared weight per sample, demodulates it (rsqrt of the squared sum), and
    the batch runs as one grouped F.conv2d (weights [B * C_out, C_in, 3, 3], groups = B)."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, cin=4, cout=6):
            super().__init__()
            self.cin, self.cout = cin, cout
            self.style = nn.Linear(cin, cin)
            self.weight = nn.Parameter(torch.randn(cout, cin, 3, 3, generator=gen) * 0.3)
            self.head = nn.Linear(cout, NUM_CLASSES)

        def forward(self, x):                                        # [B, 4, 8, 8]
            b_, _, hh, ww = x.shape
            s = self.style(x.mean((2, 3))) + 1.0                     # [B, cin]
            w = self.weight[None] * s[:, None, :, None, None]         # [B, cout, cin, 3, 3]
            w = w * torch.rsqrt((w * w).sum((2, 3, 4), keepdim=True) + 1e-8)
            y = F.conv2d(x.reshape(1, b_ * self.cin, hh, ww), w.reshape(b_ * self.cout, self.cin, 3, 3),
                         padding=1, groups=b_)
            return self.head(F.leaky_relu(y.view(b_, self.cout, hh, ww), 0.2).mean((2, 3)))

    return M(), torch.randn(BATCH, 4, 8, 8, generator=gen)


def roi_align_head(gen):
    """A two-stage detector's second stage: torchvision.ops.roi_align (7x7, sampling_ratio 2, aligned)
    over a Conv2d feature map for fixed boxes, a box head (Linear layers), and the boxes' mean score."""
    torch, nn, F = _nn()
    from torchvision.ops import roi_align
    boxes = torch.tensor([[0, 1.0, 1.5, 9.0, 10.0], [0, 4.0, 2.0, 14.5, 12.0],
                          [1, 0.0, 0.0, 15.0, 15.0], [1, 6.2, 3.3, 11.8, 8.9]])

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
            self.register_buffer("boxes", boxes)
            self.fc = nn.Sequential(nn.Flatten(), nn.Linear(8 * 7 * 7, 32), nn.ReLU(), nn.Linear(32, NUM_CLASSES))

        def forward(self, x):                                        # [B, 3, 16, 16]
            f = self.backbone(x)
            r = roi_align(f, self.boxes, output_size=(7, 7), spatial_scale=1.0, sampling_ratio=2, aligned=True)
            s = self.fc(r)                                           # [4 boxes, 10]
            return s.view(2, 2, NUM_CLASSES).mean(1)                 # per image: its two boxes' mean

    return M(), torch.randn(BATCH, 3, 16, 16, generator=gen)


def wavenet_gated(gen):
    """WaveNet blocks: causal dilated Conv1d (left padding with F.pad, dilations 1, 2, 4), the gated
    activation tanh(f) * sigmoid(g) from one conv's split channels, residual and skip 1x1 convs, the
    skips summed, ReLU, and a pooled head."""
    torch, nn, F = _nn()

    class Block(nn.Module):
        def __init__(self, c, dil):
            super().__init__()
            self.dil = dil
            self.conv = nn.Conv1d(c, 2 * c, 2, dilation=dil)
            self.res, self.skip = nn.Conv1d(c, c, 1), nn.Conv1d(c, c, 1)

        def forward(self, x):
            f, g = self.conv(F.pad(x, (self.dil, 0))).chunk(2, dim=1)
            z = torch.tanh(f) * torch.sigmoid(g)
            return x + self.res(z), self.skip(z)

    class M(nn.Module):
        def __init__(self, c=8):
            super().__init__()
            self.inp = nn.Conv1d(1, c, 1)
            self.blocks = nn.ModuleList([Block(c, d) for d in (1, 2, 4)])
            self.head = nn.Linear(c, NUM_CLASSES)

        def forward(self, x):                                        # [B, 1, T]
            h, total = self.inp(x), 0
            for blk in self.blocks:
                h, s = blk(h)
                total = total + s
            return self.head(F.relu(total).mean(2))

    return M(), torch.randn(BATCH, 1, 32, generator=gen)


def realnvp_coupling(gen):
    """RealNVP affine coupling layers on a vector: alternating checkerboard masks, scale = tanh-bounded
    MLP output, x * exp(s) + t on the unmasked half; the log-determinant (sum of s) joins the features
    into the head, as a flow's log-likelihood would."""
    torch, nn, F = _nn()
    d = 8
    masks = torch.stack([(torch.arange(d) + i) % 2 for i in range(3)]).float()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("masks", masks)
            self.s = nn.ModuleList([nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, d)) for _ in range(3)])
            self.t = nn.ModuleList([nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, d)) for _ in range(3)])
            self.head = nn.Linear(d + 1, NUM_CLASSES)

        def forward(self, x):                                        # [B, 8]
            logdet = torch.zeros(x.shape[0], 1, dtype=x.dtype)
            for i in range(3):
                m = self.masks[i]
                xm = x * m
                s = torch.tanh(self.s[i](xm)) * (1 - m)
                t = self.t[i](xm) * (1 - m)
                x = xm + (1 - m) * (x * torch.exp(s) + t)
                logdet = logdet + s.sum(1, keepdim=True)
            return self.head(torch.cat([x, logdet], 1))

    return M(), torch.randn(BATCH, 8, generator=gen)


def detr_decoder(gen):
    """DETR's head: a conv backbone's flattened features with a learned positional table, an
    nn.TransformerDecoder whose queries are an nn.Embedding's weight expanded to the batch, an
    nn.MultiheadAttention with kdim/vdim unlike its embed_dim (separate q/k/v projections), class
    logits and sigmoid boxes per query, pooled into the head."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=16, queries=5):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, d, 3, stride=2, padding=1), nn.ReLU())
            self.pos = nn.Parameter(0.1 * torch.randn(1, 16, d, generator=gen))
            self.query = nn.Embedding(queries, d)
            layer = nn.TransformerDecoderLayer(d, 4, 32, dropout=0.0, batch_first=True)
            self.decoder = nn.TransformerDecoder(layer, 1)
            self.cross = nn.MultiheadAttention(d, 2, kdim=3, vdim=3, batch_first=True)
            self.cls = nn.Linear(d, NUM_CLASSES)
            self.box = nn.Linear(d, 4)

        def forward(self, x):                                        # [B, 3, 8, 8]
            mem = self.backbone(x).flatten(2).transpose(1, 2) + self.pos      # [B, 16, d]
            q = self.query.weight.unsqueeze(0).expand(x.shape[0], -1, -1)
            h = self.decoder(q, mem)
            raw = x.flatten(2).transpose(1, 2)                       # [B, 64, 3] pixels as keys
            h = h + self.cross(h, raw, raw, need_weights=False)[0]
            boxes = torch.sigmoid(self.box(h))                       # [B, Q, 4]
            return self.cls(h).mean(1) + boxes.mean((1, 2)).unsqueeze(1)

    return M(), torch.randn(BATCH, 3, 8, 8, generator=gen)


def segformer_mini(gen):
    """SegFormer's encoder block: overlapping patch embedding (strided Conv2d + LayerNorm), efficient
    self-attention whose keys and values come from a spatially reduced map (a stride-2 Conv2d), the
    Mix-FFN (Linear, a depthwise 3x3 Conv2d on the token grid, GELU, Linear), and an all-MLP decoder that
    upsamples bilinearly and concatenates two scales."""
    torch, nn, F = _nn()

    class Block(nn.Module):
        def __init__(self, d, hw):
            super().__init__()
            self.hw = hw
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q, self.kv = nn.Linear(d, d), nn.Linear(d, 2 * d)
            self.sr = nn.Conv2d(d, d, 2, stride=2)
            self.proj = nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
            self.dw = nn.Conv2d(2 * d, 2 * d, 3, padding=1, groups=2 * d)

        def grid(self, t):                                           # [B, N, C] -> [B, C, H, W]
            return t.transpose(1, 2).reshape(t.shape[0], t.shape[2], self.hw, self.hw)

        def forward(self, t):
            h = self.n1(t)
            red = self.sr(self.grid(h)).flatten(2).transpose(1, 2)   # [B, N/4, C]
            k, v = self.kv(red).chunk(2, dim=-1)
            att = F.softmax(self.q(h) @ k.transpose(1, 2) / math.sqrt(h.shape[-1]), dim=-1)
            t = t + self.proj(att @ v)
            f = self.fc1(self.n2(t))
            f = F.gelu(self.dw(self.grid(f)).flatten(2).transpose(1, 2))
            return t + self.fc2(f)

    class M(nn.Module):
        def __init__(self, d=16):
            super().__init__()
            self.embed = nn.Conv2d(3, d, 3, stride=2, padding=1)
            self.norm = nn.LayerNorm(d)
            self.block = Block(d, 8)
            self.down = nn.Conv2d(d, d, 3, stride=2, padding=1)
            self.fuse = nn.Conv2d(2 * d, d, 1)
            self.head = nn.Linear(d, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 16, 16]
            e = self.embed(x)                                        # [B, d, 8, 8]
            t = self.block(self.norm(e.flatten(2).transpose(1, 2)))
            f1 = t.transpose(1, 2).reshape(e.shape)
            f2 = F.interpolate(self.down(f1), size=f1.shape[-2:], mode="bilinear", align_corners=False)
            return self.head(F.relu(self.fuse(torch.cat([f1, f2], 1))).mean((2, 3)))

    return M(), torch.randn(BATCH, 3, 16, 16, generator=gen)


def eca_block(gen):
    """Efficient channel attention (ECA-Net): the pooled channel descriptor as a sequence, a Conv1d of
    kernel 3 across channels (squeeze(-1).transpose(-1, -2) and back), a sigmoid gate, in a residual
    block with BatchNorm; and a maxout unit (x.view(b, c // 2, 2, h, w).max(2)[0])."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, c=16):
            super().__init__()
            self.conv1 = nn.Conv2d(3, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.eca = nn.Conv1d(1, 1, 3, padding=1, bias=False)
            self.head = nn.Linear(c // 2, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 12, 12]
            h = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(h))
            a = F.adaptive_avg_pool2d(y, 1)                          # [B, c, 1, 1]
            a = self.eca(a.squeeze(-1).transpose(-1, -2)).transpose(-1, -2).unsqueeze(-1)
            y = F.relu(h + y * torch.sigmoid(a))
            b_, c_, hh, ww = y.shape
            y = y.view(b_, c_ // 2, 2, hh, ww).max(2)[0]             # maxout over channel pairs
            return self.head(y.mean((2, 3)))

    return M(), torch.randn(BATCH, 3, 12, 12, generator=gen)


def kan_layer(gen):
    """A Kolmogorov-Arnold network layer: B-spline bases of each input by the Cox-de Boor recursion
    (interval indicators from >= and < against a grid buffer, then order-1..3 blends), times learned
    spline coefficients through einsum, plus a SiLU base branch; two such layers."""
    torch, nn, F = _nn()

    class KAN(nn.Module):
        def __init__(self, din, dout, grid=5, order=3):
            super().__init__()
            self.order = order
            h = 2.0 / grid
            g = torch.arange(-order, grid + order + 1, dtype=torch.float32) * h - 1.0
            self.register_buffer("grid", g.expand(din, -1).contiguous())   # [din, G]
            self.coef = nn.Parameter(0.1 * torch.randn(dout, din, grid + order, generator=gen))
            self.base = nn.Linear(din, dout)

        def forward(self, x):                                        # [B, din]
            g = self.grid
            xe = x.unsqueeze(-1)
            b = ((xe >= g[:, :-1]) & (xe < g[:, 1:])).to(x.dtype)
            for k in range(1, self.order + 1):
                b = ((xe - g[:, :-(k + 1)]) / (g[:, k:-1] - g[:, :-(k + 1)]) * b[:, :, :-1] +
                     (g[:, k + 1:] - xe) / (g[:, k + 1:] - g[:, 1:-k]) * b[:, :, 1:])
            return self.base(F.silu(x)) + torch.einsum("bik,oik->bo", b, self.coef)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.k1, self.k2 = KAN(6, 8), KAN(8, NUM_CLASSES)

        def forward(self, x):
            return self.k2(torch.tanh(self.k1(x)))

    return M(), torch.rand(BATCH, 6, generator=gen) * 1.6 - 0.8


def mamba_scan(gen):
    """A Mamba-style selective state-space block, its scan unrolled over 8 steps: input-dependent step
    sizes (softplus), B and C from Linear layers, the discretized state update h = exp(A dt) h + dt B x
    with A = -exp(A_log), a causal depthwise Conv1d before it, a SiLU gate, and an output projection."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, d=8, n=4):
            super().__init__()
            self.inp = nn.Linear(5, 2 * d)
            self.conv = nn.Conv1d(d, d, 3, groups=d, padding=2)
            self.dt = nn.Linear(d, d)
            self.bc = nn.Linear(d, 2 * n)
            self.a_log = nn.Parameter(torch.log(torch.arange(1, n + 1, dtype=torch.float32)).repeat(d, 1))
            self.out = nn.Linear(d, NUM_CLASSES)
            self.n = n

        def forward(self, x):                                        # [B, 8, 5]
            u, z = self.inp(x).chunk(2, dim=-1)                      # [B, L, d]
            u = F.silu(self.conv(u.transpose(1, 2))[..., :x.shape[1]].transpose(1, 2))
            dt = F.softplus(self.dt(u))                              # [B, L, d]
            bm, cm = self.bc(u).split(self.n, dim=-1)                # [B, L, n]
            a = -torch.exp(self.a_log)                               # [d, n]
            h = torch.zeros(x.shape[0], u.shape[2], self.n, dtype=x.dtype)
            ys = []
            for t in range(x.shape[1]):
                h = torch.exp(dt[:, t, :, None] * a) * h + dt[:, t, :, None] * bm[:, t, None, :] * u[:, t, :, None]
                ys.append((h * cm[:, t, None, :]).sum(-1))
            y = torch.stack(ys, 1) * F.silu(z)
            return self.out(y.mean(1))

    return M(), torch.randn(BATCH, 8, 5, generator=gen)


def fft_long_conv(gen):
    """A long convolution done in the frequency domain (Hyena / FNO style): torch.fft.rfft of the
    sequence and of a learned kernel zero-padded to twice its length, their complex product written
    with real and imaginary parts, torch.fft.irfft back, cropped causally; plus a spectral-mixing
    layer (FNO) with learned weights on the first modes."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self, c=4, length=16, modes=5):
            super().__init__()
            self.inp = nn.Linear(3, c)
            self.kernel = nn.Parameter(0.2 * torch.randn(c, length, generator=gen))
            self.wr = nn.Parameter(0.3 * torch.randn(c, modes, generator=gen))
            self.wi = nn.Parameter(0.3 * torch.randn(c, modes, generator=gen))
            self.modes, self.length = modes, length
            self.head = nn.Linear(c, NUM_CLASSES)

        def forward(self, x):                                        # [B, 16, 3]
            u = self.inp(x).transpose(1, 2)                          # [B, c, L]
            n = 2 * self.length
            uf = torch.view_as_real(torch.fft.rfft(u, n=n))          # [B, c, L + 1, 2]
            kf = torch.view_as_real(torch.fft.rfft(self.kernel, n=n))
            re = uf[..., 0] * kf[..., 0] - uf[..., 1] * kf[..., 1]
            im = uf[..., 0] * kf[..., 1] + uf[..., 1] * kf[..., 0]
            y = torch.fft.irfft(torch.complex(re, im), n=n)[..., :self.length]
            sf = torch.view_as_real(torch.fft.rfft(y))[:, :, :self.modes]          # FNO: first modes
            pad = (0, self.length // 2 + 1 - self.modes)             # the other modes zero (padded real, not
            mr = F.pad(sf[..., 0] * self.wr - sf[..., 1] * self.wi, pad)   # complex: the dynamo exporter
            mi = F.pad(sf[..., 0] * self.wi + sf[..., 1] * self.wr, pad)   # cannot pad complex values)
            z = torch.fft.irfft(torch.complex(mr, mi), n=self.length)
            return self.head(F.gelu(y + z).mean(2))

    return M(), torch.randn(BATCH, 16, 3, generator=gen)


def norm_variants(gen):
    """Normalization layers in their less common configurations: LayerNorm(bias=False),
    LayerNorm(elementwise_affine=False), InstanceNorm1d(affine=True, track_running_stats=True) (eval:
    the running statistics), GroupNorm(1, C) (LayerNorm over C, H, W), RMSNorm without a weight, and
    F.normalize along channels."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.gn = nn.GroupNorm(1, 8)
            self.inorm = nn.InstanceNorm1d(8, affine=True, track_running_stats=True)
            self.ln_nobias = nn.LayerNorm(8, bias=False)
            self.ln_plain = nn.LayerNorm(8, elementwise_affine=False)
            self.rms = nn.RMSNorm(8, elementwise_affine=False)
            self.head = nn.Linear(8, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 6, 6]
            h = F.relu(self.gn(self.conv(x)))
            t = self.inorm(h.flatten(2))                             # [B, 8, 36]
            t = F.normalize(t, dim=1).transpose(1, 2)                # [B, 36, 8]
            t = self.ln_plain(self.ln_nobias(t) * 2.0) + self.rms(t)
            return self.head(t.mean(1))

    m = M()
    with torch.no_grad():  # running statistics other than 0 / 1, so eval mode reads something
        m.inorm.running_mean.copy_(0.1 * torch.randn(8, generator=gen))
        m.inorm.running_var.copy_(1 + 0.2 * torch.rand(8, generator=gen))
    return m, torch.randn(BATCH, 3, 6, 6, generator=gen)


def indexing_ops(gen):
    """Indexing functions: index_select, take_along_dim, index_add (functional), index_put with
    accumulate=True, scatter_reduce with amax and amin, gather along a negative dim, and boolean-mask
    assignment with torch.where. (scatter_reduce(reduce="mean", include_self=False) is left out: the
    dynamo exporter writes it as two plain scatters, the last update winning, not a mean; ONNX Runtime
    and amptrain then agree with each other and not with PyTorch.)"""
    torch, nn, F = _nn()
    idx = torch.tensor([3, 0, 2, 2])
    order = torch.tensor([[1, 0, 3, 2, 5, 4], [5, 4, 3, 2, 1, 0]])

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(6, 6)
            self.register_buffer("idx", idx)
            self.register_buffer("order", order)
            self.head = nn.Linear(6 * 4 + 6 + 6 + 4 + 4, NUM_CLASSES)

        def forward(self, x):                                        # [B, 4, 6]
            h = torch.tanh(self.a(x))
            sel = torch.index_select(h, 1, self.idx)                 # [B, 4, 6]
            tak = torch.take_along_dim(h[:, 0], self.order, dim=1)   # [B, 6]
            added = torch.zeros_like(h[:, :, 0]).index_add(1, self.idx, h[:, :, 1])          # [B, 4]
            put = torch.zeros(6, dtype=x.dtype).index_put((self.idx,), h[:, 1, :4].sum(0), accumulate=True)
            mx = torch.zeros(x.shape[0], 4, dtype=x.dtype).scatter_reduce(
                1, self.idx.expand(x.shape[0], -1), h[:, :, 2], reduce="amax", include_self=False)
            mean = torch.zeros(x.shape[0], 4, dtype=x.dtype).scatter_reduce(   # (reduce="mean" exports wrong:
                1, self.idx.expand(x.shape[0], -1), h[:, :, 3], reduce="amin", include_self=False)  # see above)
            g = torch.gather(h, -1, self.order[:1, :].expand(4, -1).expand(x.shape[0], 4, 6))
            masked = torch.where(g > 0, g, 0.1 * g)
            feats = torch.cat([sel.flatten(1) + masked.flatten(1), tak, put.expand(x.shape[0], -1), added, mx + mean], 1)
            return self.head(feats)

    return M(), torch.randn(BATCH, 4, 6, generator=gen)


def resize_variants(gen):
    """Interpolation modes beyond the common ones: nearest-exact, bicubic with align_corners=True on a
    learned positional table (ViT's position-embedding resize, so the Resize input is a parameter),
    area (adaptive average pooling), trilinear on a 5-D volume, and bilinear with a non-integer scale."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = nn.Parameter(0.1 * torch.randn(1, 4, 3, 3, generator=gen))
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.conv3 = nn.Conv3d(1, 2, 3, padding=1)
            self.head = nn.Linear(4 + 4 + 4 + 2, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 6, 6]
            h = self.conv(x)
            pos = F.interpolate(self.pos, size=(6, 6), mode="bicubic", align_corners=True)
            a = F.interpolate(h + pos, scale_factor=2, mode="nearest-exact")            # [B, 4, 12, 12]
            b = F.interpolate(h, size=(4, 4), mode="area")
            c = F.interpolate(h, scale_factor=1.5, mode="bilinear", align_corners=False)
            v = self.conv3(x[:, :1].unsqueeze(1).expand(-1, -1, 2, -1, -1))             # [B, 2, 2, 6, 6]
            v = F.interpolate(v, scale_factor=(2, 1, 1), mode="trilinear", align_corners=False)
            return self.head(torch.cat([a.mean((2, 3)), b.mean((2, 3)), c.mean((2, 3)), v.mean((2, 3, 4))], 1))

    return M(), torch.randn(BATCH, 3, 6, 6, generator=gen)


def segnet_unpool(gen):
    """SegNet's decoder: MaxPool2d(return_indices=True) in the encoder, MaxUnpool2d with those indices in
    the decoder (the max positions get the values back, the rest 0), Conv-BN-ReLU around them."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
            self.pool = nn.MaxPool2d(2, 2, return_indices=True)
            self.mid = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
            self.unpool = nn.MaxUnpool2d(2, 2)
            self.dec = nn.Conv2d(8, 4, 3, padding=1)
            self.head = nn.Linear(4, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 16, 16]
            h, idx = self.pool(self.enc(x))                          # [B, 8, 8, 8]
            u = self.unpool(self.mid(h), idx)                        # [B, 8, 16, 16]
            return self.head(self.dec(u).mean((2, 3)))

    return M(), torch.randn(BATCH, 3, 16, 16, generator=gen)


def packed_lstm(gen):
    """A padded-batch text classifier: lengths counted in forward from the non-zero token ids,
    pack_padded_sequence(enforce_sorted=False) into an LSTM, the last valid step's hidden state (h_n)."""
    torch, nn, F = _nn()
    from torch.nn.utils.rnn import pack_padded_sequence

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 24, padding_idx=0)
            self.lstm = nn.LSTM(24, 32, batch_first=True)
            self.head = nn.Linear(32, NUM_CLASSES)

        def forward(self, tokens):                                   # [B, T], 0 = padding at the end
            lengths = (tokens != 0).sum(1)
            packed = pack_padded_sequence(self.emb(tokens), lengths, batch_first=True, enforce_sorted=False)
            _, (h, _) = self.lstm(packed)
            return self.head(h[-1])

    x = torch.randint(1, VOCAB, (BATCH, SEQ), generator=gen)
    x[1, SEQ - 5:] = 0                                               # the second row is 11 tokens long
    return M(), x


def antialias_resize(gen):
    """In-model preprocessing as torchvision's tensor transforms do it: a bilinear and a bicubic
    down-sampling with antialias=True (Resize with antialias=1, opset 18), then a small CNN."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.conv2 = nn.Conv2d(3, 8, 3, padding=1)
            self.head = nn.Linear(16, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 24, 24]
            a = F.interpolate(x, size=(10, 10), mode="bilinear", align_corners=False, antialias=True)
            b = F.interpolate(x, scale_factor=0.5, mode="bicubic", align_corners=False, antialias=True)
            return self.head(torch.cat([F.relu(self.conv(a)).mean((2, 3)), F.relu(self.conv2(b)).mean((2, 3))], 1))

    return M(), torch.randn(BATCH, 3, 24, 24, generator=gen)


def qat_fake_quant(gen):
    """A quantization-aware-training model: activations and weights through
    torch.fake_quantize_per_tensor_affine (QuantizeLinear -> DequantizeLinear in the export; the gradient
    is the straight-through estimator inside the quantization range, 0 outside)."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
            self.head = nn.Linear(8, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 12, 12]
            fq = torch.fake_quantize_per_tensor_affine
            h = F.relu(self.conv(fq(x, 0.05, 128, 0, 255)))
            w = fq(self.conv2.weight, 0.01, 0, -128, 127)
            h = F.relu(F.conv2d(fq(h, 0.02, 0, 0, 255), w, self.conv2.bias, padding=1))
            return self.head(h.mean((2, 3)))

    return M(), torch.randn(BATCH, 3, 12, 12, generator=gen)


def einsum_variants(gen):
    """torch.einsum beyond batched matmul: a diagonal ('bii->bi'), an outer product ('bi,bj->bij'),
    ellipsis broadcasting ('...ij,jk->...ik'), a bilinear form with three operands ('bi,oij,bj->bo',
    nn.Bilinear written out) and a full contraction to a per-sample scalar ('bij,bij->b')."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(6, 36)
            self.w = nn.Parameter(0.2 * torch.randn(6, 5, generator=gen))
            self.bil = nn.Parameter(0.2 * torch.randn(4, 6, 6, generator=gen))
            self.head = nn.Linear(6 + 5 + 4 + 1 + 6, NUM_CLASSES)

        def forward(self, x):                                        # [B, 6]
            m = self.proj(x).view(-1, 6, 6)
            diag = torch.einsum("bii->bi", m)
            outer = torch.einsum("bi,bj->bij", x, diag)
            ell = torch.einsum("...ij,jk->...ik", outer, self.w).mean(1)
            bil = torch.einsum("bi,oij,bj->bo", x, self.bil, diag)
            full = torch.einsum("bij,bij->b", m, outer).unsqueeze(1)
            return self.head(torch.cat([diag, ell, bil, full, x], 1))

    return M(), torch.randn(BATCH, 6, generator=gen)


def conv_same_padding(gen):
    """Conv layers with padding='same' where it is asymmetric (even kernels, kernel 4 with dilation 2 in
    1-D, (2, 4) in 2-D), grouped and depthwise, and ConvTranspose1d with output_padding."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c2 = nn.Conv2d(3, 8, (2, 4), padding="same")
            self.g = nn.Conv2d(8, 8, 3, padding="same", dilation=2, groups=4)
            self.dw = nn.Conv2d(8, 8, 4, padding="same", groups=8, bias=False)
            self.c1 = nn.Conv1d(8, 6, 4, padding="same", dilation=2)
            self.t1 = nn.ConvTranspose1d(6, 4, 3, stride=2, padding=1, output_padding=1)
            self.head = nn.Linear(8 + 4, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 9, 10]
            h = F.gelu(self.dw(F.relu(self.g(F.relu(self.c2(x))))))
            s = F.relu(self.c1(h.mean(2)))                           # [B, 6, 10]
            t = self.t1(s)                                           # [B, 4, 20]
            return self.head(torch.cat([h.mean((2, 3)), t.mean(2)], 1))

    return M(), torch.randn(BATCH, 3, 9, 10, generator=gen)


def bn_variants(gen):
    """BatchNorm beyond the defaults: affine=False, track_running_stats=False (batch statistics in eval
    too), momentum=None (a cumulative average), BatchNorm1d over [N, C] features and over [N, C, L]."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn_na = nn.BatchNorm2d(8, affine=False)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
            self.bn_nt = nn.BatchNorm2d(8, track_running_stats=False)
            self.c1 = nn.Conv1d(8, 6, 3, padding=1)
            self.bn_cum = nn.BatchNorm1d(6, momentum=None)
            self.fc = nn.Linear(6, 12)
            self.bn_feat = nn.BatchNorm1d(12)
            self.head = nn.Linear(12, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 8, 8]
            h = F.relu(self.bn_nt(self.conv2(F.relu(self.bn_na(self.conv(x))))))
            s = F.relu(self.bn_cum(self.c1(h.mean(2))))              # [B, 6, 8]
            return self.head(F.relu(self.bn_feat(self.fc(s.mean(2)))))

    return M(), torch.randn(4, 3, 8, 8, generator=gen)


def explicit_casts(gen):
    """Precision chosen by the model's own code: a block run under torch.autocast inside forward (the
    export keeps its casts), explicit x.half()/x.bfloat16() round trips (a "manual AMP" layer), an
    integer cast of a float (x.long()) feeding an embedding, and a bool mask cast to float."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 16)
            self.b = nn.Linear(16, 16)
            self.emb = nn.Embedding(5, 16)
            self.head = nn.Linear(16, NUM_CLASSES)

        def forward(self, x):                                        # [B, 8]
            h = self.a(x)
            h16 = F.relu(F.linear(h.half(), self.b.weight.half(), self.b.bias.half())).float()
            hb = torch.tanh(h.bfloat16()).float()
            bucket = (torch.sigmoid(x[:, 0]) * 4.99).long()           # [B] in 0..4, no gradient
            mask = (h > 0).float()
            return self.head(h16 + hb * mask + self.emb(bucket))

    return M(), torch.randn(BATCH, 8, generator=gen)


def constant_builders(gen):
    """Tensors built in forward: torch.eye, torch.linspace, torch.full_like, torch.ones_like with a
    dtype, torch.diag_embed and torch.diagonal, torch.tril on a ones matrix, torch.arange with a step."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(6, 6)
            self.head = nn.Linear(6 * 4 + 1, NUM_CLASSES)

        def forward(self, x):                                        # [B, 6]
            h = self.a(x)
            n = h.shape[1]
            eye = torch.eye(n, dtype=h.dtype)
            ramp = torch.linspace(0.0, 1.0, n, dtype=h.dtype)
            lower = torch.tril(torch.ones(n, n, dtype=h.dtype))
            m = torch.diag_embed(h) + eye * 0.5                       # [B, 6, 6]
            d = torch.diagonal(m @ lower, dim1=-2, dim2=-1)           # [B, 6]
            filled = torch.full_like(h, 0.25) * ramp + torch.ones_like(h, dtype=torch.float32)
            steps = torch.arange(0, 2 * n, 2, dtype=h.dtype) / (2 * n)
            cum = (h * steps).sum(1, keepdim=True)
            return self.head(torch.cat([h, d, filled * h, (h @ lower) * ramp, cum], 1))

    return M(), torch.randn(BATCH, 6, generator=gen)


def sort_ops(gen):
    """Order statistics in forward: torch.sort (descending) and argsort, torch.topk on a middle dim,
    the k-th smallest through topk(largest=False), a sorted-pooling head. (torch.median(x, dim) and
    torch.kthvalue export with neither exporter.)"""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(5, 8)
            self.head = nn.Linear(8 + 8 + 8 * 3 + 5 + 8, NUM_CLASSES)

        def forward(self, x):                                        # [B, 7, 5]
            h = self.a(x)                                            # [B, 7, 8]
            srt, _ = torch.sort(h, dim=1, descending=True)
            order = torch.argsort(h[:, 0], dim=-1)
            top, _ = torch.topk(h.transpose(1, 2), 3, dim=2)         # [B, 8, 3]
            kth = torch.topk(x, 2, dim=1, largest=False)[0][:, 1]    # [B, 5]: the 2nd smallest
            picked = torch.gather(h[:, 1], 1, order)                 # [B, 8]
            feats = torch.cat([srt[:, :2].mean(1), top.mean(2), top.flatten(1), kth, picked], 1)
            return self.head(feats)

    return M(), torch.randn(BATCH, 7, 5, generator=gen)


def special_math(gen):
    """torch.special and friends as model code uses them: expm1, log1p, logit (with eps), xlogy,
    logaddexp, sinc, frac and trunc, clamp with tensor bounds. (The TorchScript exporter has no expm1;
    torch.special.erfinv and torch.copysign export with neither exporter.)"""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 12)
            self.lo = nn.Parameter(-0.5 - torch.rand(12, generator=gen))
            self.head = nn.Linear(12 * 6, NUM_CLASSES)

        def forward(self, x):                                        # [B, 8]
            h = self.a(x)
            p = torch.sigmoid(h)
            e = torch.expm1(0.3 * h) + torch.log1p(p)
            lg = torch.logit(p, eps=1e-4) + torch.xlogy(p, p + 0.5)
            la = torch.logaddexp(h, 0.5 * h)
            sc = torch.sinc(h) + torch.sign(h) * p
            fr = torch.frac(3 * h) + 0.1 * torch.trunc(3 * h)
            cl = torch.clamp(h, min=self.lo, max=-self.lo)
            return self.head(torch.cat([e, lg, la, sc, fr, cl], 1))

    return M(), torch.randn(BATCH, 8, generator=gen)


def grid_sample_variants(gen):
    """F.grid_sample beyond the spatial transformer's defaults: bicubic with border padding, nearest
    with reflection padding and align_corners=True, bilinear on a learned grid offset (deformable
    sampling: the grid is a parameter plus a function of the input)."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.offset = nn.Conv2d(3, 2, 3, padding=1)
            ys, xs = torch.meshgrid(torch.linspace(-1.1, 1.1, 7), torch.linspace(-1.1, 1.1, 9), indexing="ij")
            self.base = nn.Parameter(torch.stack([xs, ys], -1).unsqueeze(0))  # [1, 7, 9, 2]
            self.head = nn.Linear(6 * 3, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 10, 12]
            h = torch.tanh(self.conv(x))
            off = F.adaptive_avg_pool2d(self.offset(x), (7, 9)).permute(0, 2, 3, 1) * 0.1
            grid = self.base + off                                    # [B, 7, 9, 2]
            a = F.grid_sample(h, grid, mode="bicubic", padding_mode="border", align_corners=False)
            b = F.grid_sample(h, grid, mode="nearest", padding_mode="reflection", align_corners=True)
            c = F.grid_sample(h, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
            return self.head(torch.cat([a.mean((2, 3)), b.mean((2, 3)), c.mean((2, 3))], 1))

    return M(), torch.randn(BATCH, 3, 10, 12, generator=gen)


def rnn_learned_state(gen):
    """Recurrent layers whose initial state is learned (nn.Parameter h0/c0 expanded over the batch):
    a 2-layer LSTM fed (h0, c0), a GRU fed h0, an nn.RNN with ReLU; sequence-major (batch_first=False)."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(4, 12)
            self.lstm = nn.LSTM(12, 16, num_layers=2)
            self.h0 = nn.Parameter(0.1 * torch.randn(2, 1, 16, generator=gen))
            self.c0 = nn.Parameter(0.1 * torch.randn(2, 1, 16, generator=gen))
            self.gru = nn.GRU(16, 10)
            self.g0 = nn.Parameter(0.1 * torch.randn(1, 1, 10, generator=gen))
            self.rnn = nn.RNN(10, 8, nonlinearity="relu")
            self.head = nn.Linear(8, NUM_CLASSES)

        def forward(self, x):                                        # [B, T, 4]
            b = x.shape[0]
            s = self.inp(x).transpose(0, 1)                          # [T, B, 12]
            y, _ = self.lstm(s, (self.h0.expand(-1, b, -1).contiguous(), self.c0.expand(-1, b, -1).contiguous()))
            y, _ = self.gru(y, self.g0.expand(-1, b, -1).contiguous())
            y, _ = self.rnn(y)
            return self.head(y.mean(0))

    return M(), torch.randn(BATCH, 6, 4, generator=gen)


def pad_variants(gen):
    """Padding layers beyond Conv's own: ReflectionPad3d on a volume, ReplicationPad1d, a ConstantPad2d
    that crops (negative padding), ZeroPad2d asymmetric, and F.pad on the channel axis."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c3 = nn.Conv3d(2, 4, 3)
            self.c1 = nn.Conv1d(3, 4, 3)
            self.c2 = nn.Conv2d(5, 4, 3)
            self.head = nn.Linear(12, NUM_CLASSES)

        def forward(self, x):                                        # [B, 3, 8, 8]
            v = F.pad(x[:, :2].unsqueeze(2).expand(-1, -1, 3, -1, -1), (1, 1, 1, 1, 1, 1), mode="reflect")
            a = F.relu(self.c3(v)).mean((2, 3, 4))
            s = F.pad(x.mean(2), (2, 1), mode="replicate")
            b = F.relu(self.c1(s)).mean(2)
            c = nn.ConstantPad2d((-1, -1, 0, -2), 0.5)(x)
            c = nn.ZeroPad2d((1, 0, 2, 0))(c)
            c = F.pad(c, (0, 0, 0, 0, 1, 1))                          # [B, 5, ...]: channels padded
            return self.head(torch.cat([a, b, F.relu(self.c2(c)).mean((2, 3))], 1))

    return M(), torch.randn(BATCH, 3, 8, 8, generator=gen)


def dcgan_generator(gen):
    """A DCGAN generator run as a classifier's front end: a latent vector through Linear, then
    ConvTranspose2d (stride 2) + BatchNorm2d + ReLU twice and a Tanh image, which a small conv head
    classifies (the generator's Tanh and transposed-convolution gradients end to end)."""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 32 * 4 * 4)
            self.up = nn.Sequential(nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                    nn.ConvTranspose2d(16, 3, 4, 2, 1), nn.Tanh())
            self.head = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.LeakyReLU(0.2), nn.AdaptiveAvgPool2d(1),
                                      nn.Flatten(), nn.Linear(8, NUM_CLASSES))

        def forward(self, z):                                        # [B, 16]
            img = self.up(self.fc(z).view(-1, 32, 4, 4))             # [B, 3, 16, 16]
            return self.head(img)

    return M(), torch.randn(4, 16, generator=gen)


def round_ops(gen):
    """Rounding in forward: torch.round with decimals, floor/ceil on a no-gradient branch, clamp_min,
    and torch.where on a rounded mask. (A straight-through round written x + (round(x) - x).detach() is
    left out: ONNX has no detach, both exporters drop it, and the exported gradient through Round is 0
    where PyTorch's is 1; ONNX Runtime's training and amptrain both follow the file.)"""
    torch, nn, F = _nn()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(6, 8)
            self.head = nn.Linear(8 * 3, NUM_CLASSES)

        def forward(self, x):                                        # [B, 6]
            h = self.a(x)
            r = torch.round(h, decimals=1)
            steps = (torch.floor(h.detach()) + torch.ceil(h.detach())) * 0.1
            m = torch.where(torch.round(torch.sigmoid(h)) > 0, h, h.clamp_min(-0.5))
            return self.head(torch.cat([r, h * steps, m], 1))

    return M(), torch.randn(BATCH, 6, generator=gen)


ZOO = {f.__name__: f for f in (gpt_mini, gru_classifier, conv1d_audio, unet_mini, pixel_shuffle_sr,
                               mlp_activations, einsum_attention, tensor_functions, conv3d_video, r2plus1d_video, mc3_video,
                               transformer_seq2seq, lraspp_mobilenet_v3, deeplabv3_mobilenet_v3,
                               resnet18_fpn, cbam_cnn, stn_classifier, numel_norms,
                               clip_text_pool, llama_mini, bert_padding_mask, shrink_pool_onehot,
                               trig_features, graph_scatter, fold_patch_mixer, lrn_alexnet,
                               embedding_bag_text, style_transfer, tcn_weight_norm, moe_mini, tied_lm,
                               yolo_mini, padding_mode_convs, unet3d_mini, metric_heads,
                               pooling_variants, alibi_encoder, spectral_norm_critic,
                               crnn_ocr, pixelcnn_masked, mha_variants, bicubic_sr,
                               conformer_conv, grucell_decoder, unfold_mixer,
                               elementwise_math, scan_math, fnet_mixer, mel_frontend, convtranspose_variants,
                               glu_shuffle_heads, lstm_proj_tagger, prenorm_gelu_encoder,
                               pointnet_mini, capsule_routing, gat_layer, dynamic_conv, roi_align_head,
                               wavenet_gated, realnvp_coupling, detr_decoder, segformer_mini, eca_block,
                               kan_layer, mamba_scan, fft_long_conv, norm_variants, indexing_ops,
                               resize_variants, segnet_unpool, packed_lstm, antialias_resize, qat_fake_quant,
                               einsum_variants, conv_same_padding, bn_variants,
                               explicit_casts, constant_builders, sort_ops, special_math,
                               grid_sample_variants, rnn_learned_state, pad_variants,
                               dcgan_generator, round_ops)}


def build(name, seed=0):
    """(model, example input) of a zoo model, seeded as torchvision_coverage.build seeds its models."""
    import torch
    torch.manual_seed(seed)
    return ZOO[name](torch.Generator().manual_seed(seed + 1))
