#!/usr/bin/env python3
"""Probe: PyTorch functions one at a time through an exporter and `amptrain run`.

Each case is a tiny module around one torch function (interpolation modes, adaptive pooling, fold /
unfold, padding modes, losses inside the model, index and shape functions, ...), exported with
TorchScript (`ts`), the dynamo exporter (`dynamo`) or the dynamo exporter at an opset (`dynamo23`),
run by amptrain and compared with PyTorch's float64 output (relative L2, ok below 1e-4). It finds the
ops and attribute combinations that import, run or match nowhere else; docs/function_probe.md keeps
the last results.

  .cache/torch-pypi/bin/python tools/bench/function_probe.py EXPORTER [CASE ...]   (all cases by default)
  AMPTRAIN=build/tools/amptrain  OUT=/tmp/function_probe
"""
import glob
import os
import subprocess
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

AMPTRAIN = os.environ.get("AMPTRAIN", os.path.join(os.path.dirname(__file__), "..", "..", "build", "tools", "amptrain"))
OUT = os.environ.get("OUT", "/tmp/function_probe")
warnings.filterwarnings("ignore")
torch.manual_seed(0)
class L(nn.Module):
    def __init__(s, f, mods=None):
        super().__init__(); s.f=f; s.m=nn.ModuleList(mods or [])
    def forward(s, x): return s.f(x, s.m)
cases = {
 "bicubic": (lambda x,m: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False), (2,3,8,8)),
 "adaptive_avg_3x3": (lambda x,m: F.adaptive_avg_pool2d(x,(3,3)), (2,3,9,9)),
 "adaptive_avg_odd": (lambda x,m: F.adaptive_avg_pool2d(x,(3,5)), (2,3,10,11)),
 "adaptive_max_2": (lambda x,m: F.adaptive_max_pool2d(x,2), (2,3,8,8)),
 "unfold": (lambda x,m: F.unfold(x, 3, padding=1), (2,3,6,6)),
 "fold": (lambda x,m: F.fold(x, (4,4), 2, stride=2), (2,12,4)),
 "fold_overlap": (lambda x,m: F.fold(x, (5,5), 3, padding=1), (2,18,25)),
 "fold_dilated": (lambda x,m: F.fold(x, (6,7), (2,3), dilation=(2,1), padding=(1,0), stride=(2,1)), (2,12,15)),
 "lppool": (lambda x,m: F.lp_pool2d(x, 2, 2), (2,3,8,8)),
 "lrn": (lambda x,m: F.local_response_norm(x, 3), (2,6,5,5)),
 "pad_reflect": (lambda x,m: F.pad(x,(1,2,2,1),mode="reflect"), (2,3,6,6)),
 "pad_replicate": (lambda x,m: F.pad(x,(1,2,2,1),mode="replicate"), (2,3,6,6)),
 "pad_circular": (lambda x,m: F.pad(x,(1,2,2,1),mode="circular"), (2,3,6,6)),
 "channel_shuffle": (lambda x,m: F.channel_shuffle(x, 2), (2,4,3,3)),
 "normalize": (lambda x,m: F.normalize(x, dim=1), (2,5,3)),
 "cdist": (lambda x,m: torch.cdist(x, x), (2,5,3)),
 "hardtanh_relu6": (lambda x,m: F.hardtanh(x,-0.5,0.5)+F.relu6(x), (2,5)),
 "logsigmoid": (lambda x,m: F.logsigmoid(x), (2,5)),
 "glu": (lambda x,m: F.glu(x, -1), (2,6)),
 "cumprod": (lambda x,m: torch.cumprod(x, 1), (2,5)),
 "max_unpool": (lambda x,m: F.max_unpool2d(*F.max_pool2d(x,2,return_indices=True), 2), (2,3,4,4)),
 "embedding_bag": (lambda x,m: m[0]((x.abs()*10).long().clamp(max=9)), (2,4)),
 "var_mean": (lambda x,m: torch.var_mean(x, dim=1)[0] + torch.std(x,1), (3,6)),
 "masked_fill_inf": (lambda x,m: x.masked_fill(x>0.5, float("-inf")).softmax(-1), (2,6)),
 "argsort_topk": (lambda x,m: x.sort(dim=1)[0] + x.topk(2,1)[0].sum(1,keepdim=True), (2,6)),
 "group_conv_transpose": (lambda x,m: m[0](x), (2,4,5,5)),
 "maxpool_ceil_dil": (lambda x,m: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True), (2,3,9,9)),
 "avgpool_ceil_nopad": (lambda x,m: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (2,3,8,8)),
 "einsum_bilinear": (lambda x,m: m[0](x, x), (3,4)),
 # Random ops (RandomUniformLike, RandomNormalLike, Bernoulli) in forms whose result is known.
 "rand_like_mask": (lambda x,m: x * (torch.rand_like(x) < 1.0).float(), (2,5)),
 "randn_like_times_zero": (lambda x,m: x + 0.0 * torch.randn_like(x).clamp(-1e3, 1e3), (2,5)),
 "bernoulli_ones": (lambda x,m: x * torch.bernoulli((x.abs() + 2).clamp(max=1.0)), (2,5)),
 "prelu_channel": (lambda x,m: m[0](x), (2,3,4,4)),
 "upsample_nearest_scale": (lambda x,m: F.interpolate(x, scale_factor=(1.5,2), mode="nearest"), (2,3,4,4)),
 "bilinear_aligned": (lambda x,m: F.interpolate(x, size=(7,9), mode="bilinear", align_corners=True), (2,3,4,5)),
 "trilinear": (lambda x,m: F.interpolate(x, scale_factor=2, mode="trilinear"), (1,2,3,3,3)),
 "clamp_tensor": (lambda x,m: torch.clamp(x, min=torch.zeros_like(x[:1]), max=torch.ones_like(x[:1])*0.3), (3,4)),
 "where_scalar": (lambda x,m: torch.where(x>0, x, 0.1*x), (3,4)),
 "remainder_fmod": (lambda x,m: torch.remainder(x*5, 1.3)+torch.fmod(x*5,1.3), (3,4)),
 "floor_div": (lambda x,m: torch.floor_divide(x*5, 1.3), (3,4)),
 "bitwise_not_mask": (lambda x,m: x*(~(x>0)).float(), (3,4)),
 "gelu_tanh": (lambda x,m: F.gelu(x, approximate="tanh"), (3,4)),
 "silu_hardswish": (lambda x,m: F.silu(x)+F.hardswish(x)+F.hardsigmoid(x), (3,4)),
 "log_softmax_nll": (lambda x,m: F.nll_loss(F.log_softmax(x,1), torch.tensor([1,0,2]), reduction="none").unsqueeze(1)+x, (3,4)),
 "cross_entropy_in_model": (lambda x,m: F.cross_entropy(x, torch.tensor([1,0,2])).reshape(1,1)+x, (3,4)),
 "expm1_log1p": (lambda x,m: torch.expm1(x)+torch.log1p(x.abs()), (3,4)),
 "rsqrt_reciprocal": (lambda x,m: torch.rsqrt(x.abs()+1)+torch.reciprocal(x.abs()+1), (3,4)),
 "amax_amin": (lambda x,m: x.amax(1,keepdim=True)-x.amin(1,keepdim=True)+x, (3,4)),
 "linspace": (lambda x,m: x + torch.linspace(0,1,4), (3,4)),
 "repeat_interleave": (lambda x,m: x.repeat_interleave(2, dim=1), (3,4)),
 "tile_repeat": (lambda x,m: x.repeat(2,3), (3,4)),
 "chunk_stack": (lambda x,m: torch.stack(x.chunk(2,1),0).sum(0), (3,4)),
 "index_select": (lambda x,m: x.index_select(1, torch.tensor([3,0,2])), (3,4)),
 "diag_embed": (lambda x,m: torch.diag_embed(x), (3,4)),
 "tril_mask": (lambda x,m: torch.tril(x), (4,4)),
 "outer": (lambda x,m: torch.outer(x[0], x[1]), (2,4)),
 "baddbmm": (lambda x,m: torch.baddbmm(x, x, x.transpose(1,2)), (2,3,3)),
}
mods = {"embedding_bag":[nn.EmbeddingBag(10, 3, mode="mean")], "group_conv_transpose":[nn.ConvTranspose2d(4,6,3,stride=2,groups=2,output_padding=1)],
        "einsum_bilinear":[nn.Bilinear(4,4,2)], "prelu_channel":[nn.PReLU(3)]}
names = sys.argv[2:] or list(cases)
exporter = sys.argv[1]
res = {}
for n in names:
    f, shape = cases[n]
    m = L(f, mods.get(n)).eval()
    x = torch.randn(*shape)
    d = f"{OUT}/{n}.{exporter}"; os.makedirs(d, exist_ok=True)
    try:
        with torch.no_grad(): want = m.double()(x.double()).float().numpy() if n not in ("embedding_bag",) else m(x).numpy()
        m = m.float()
        torch.onnx.export(m, (x,), f"{d}/m.onnx", dynamo=(exporter!="ts"), input_names=["x"] if exporter=="ts" else None, **({"opset_version":int(exporter[6:])} if exporter.startswith("dynamo") and exporter!="dynamo" else {}))
    except Exception as e:
        res[n] = "EXPORT FAIL " + str(e).split("\n")[0][:100]; continue
    np.save(f"{d}/x.npy", x.numpy())
    import onnx
    inp = onnx.load(f"{d}/m.onnx").graph.input[0].name
    p = subprocess.run([AMPTRAIN,"run",f"{d}/m.onnx","-i",f"{inp}={d}/x.npy","-o",f"{d}/out"],capture_output=True,text=True)
    if p.returncode: res[n] = "AMPTRAIN FAIL " + p.stderr.strip().split("\n")[-1][:220]; continue
    got = np.load(sorted(glob.glob(f"{d}/out/*.npy"))[0])
    err = np.linalg.norm(got.astype(np.float64)-want)/max(np.linalg.norm(want),1e-30) if got.shape==want.shape else None
    res[n] = f"ok rel {err:.1e}" if err is not None and err < 1e-4 else f"MISMATCH {err} {got.shape} {want.shape}"
for n,r in res.items(): print(f"{n:24s} {r}")
