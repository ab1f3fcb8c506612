#!/usr/bin/env python3
"""Coverage of current PyTorch exports: torchvision classifiers (and an LSTM and a TransformerEncoder
classifier) through both exporters of PyPI's torch, run, trained one step and converted by amptrain.

  nice -n 19 .cache/torch-pypi/bin/python tools/bench/torchvision_coverage.py [--models a,b]
      [--out DIR (default build/torchvision_coverage)] [--skip-grad] [--skip-convert]
      [--md docs/torchvision_coverage.md] [--timeout 600] [--amptrain build/tools/amptrain]
      [--ort-python .venv/bin/python] [--threads 2] [--append] [--table-only]

--append keeps the pairs already in OUT/results.jsonl (a rerun of a pair replaces its line in the table),
so that a long run can be done in parts; --table-only only rewrites the table from OUT/results.jsonl.

Every model is built with random weights (weights=None, torch.manual_seed(0)), 10 classes, batch 2, at
the smallest input each accepts (mostly 3x32x32), and exported by
  ts:     torch.onnx.export(..., dynamo=False)              (the TorchScript exporter)
  dynamo: torch.onnx.export(..., dynamo=True)               (the torch.export-based exporter)
  dynamoNN (only when asked for, e.g. --exporters dynamo23): the same with opset_version=NN
Each model/exporter pair is one subprocess (this script with --case) under a timeout, so that a crash
or hang of one leaves the rest. Per pair it measures:
  1. Inference: the default eval export (model.eval(); the exporter's defaults, so TorchScript folds
     constants and BatchNorm, dynamo runs onnxscript's optimizer). `amptrain run` against PyTorch's
     float64 eval output (model.double() on a deep copy, input cast to float64): pass at relative L2
     <= 1e-4. An export PyTorch itself cannot make is recorded with the exception's first line.
  2. Gradients (not with --skip-grad): every Dropout / StochasticDepth / attention dropout set to p=0,
     then a training export (ts: training=TrainingMode.TRAINING, do_constant_folding=False; dynamo:
     model.train(), optimize=False). `amptrain grad` (mean cross-entropy against int64 labels, BN with
     batch statistics) against PyTorch's float64 gradients, with PyTorch's own float32 error as the
     yardstick (shared/docs/TESTING.md): a tensor passes when
        |ours - ref64| <= max(1e-4 |ref64|, 10 |torch32 - ref64|)      (L2 norms per tensor)
     ratio = |ours - ref64| / that bound (<= 1 passes). Every parameter must get a gradient file: the
     export's initializer names are mapped to PyTorch's parameter names (state_dict keys, or for dynamo
     the exported program's signature where they differ).
  3. Conversion (not with --skip-convert): `amptrain convert EVAL.onnx -o OUT --amp O2 --dtype fp16
     --report R.json` of the eval export; in the ONNX Runtime venv (--ort-python: onnx, onnxruntime,
     onnxconverter-common): onnx.checker.check_model, ORT CPU output within 1e-2 relative L2 of the fp32
     model's ORT output, and the same for onnxconverter-common's
     float16.convert_float_to_float16(model, keep_io_types=True); Cast nodes of both (all graphs).
Writes OUT/results.jsonl (one line per model/exporter), each pair's files under OUT/<model>.<exporter>/
(gradient files are deleted after comparison to save disk), and the Markdown table --md with the CPU,
versions, date, command and wall time. All amptrain runs use --threads (default 2).
"""
import argparse
import copy
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_zoo  # noqa: E402  (beside this script)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NUM_CLASSES = 10
BATCH = 2
VOCAB, SEQ = 100, 16
EXPORTERS = ["ts", "dynamo"]  # also "dynamoNN": the dynamo exporter with opset_version=NN
INFER_TOL, CONVERT_TOL = 1e-4, 1e-2

# name -> (torchvision constructor keyword arguments, image size). 64x64 (AlexNet needs >= 63 px):
# most of these nets take 32x32, but there the last stages are 1x1, and a training-mode BatchNorm over
# batch 2 x 1x1 normalizes two values, so ill-conditioned that float32 gradients lose most digits;
# 64x64 keeps 2x2 or more there (Inception-v3 takes >= 75 px; 128 for the same reason).
TORCHVISION = {
    "resnet18": ({}, 64),
    "resnet50": ({}, 64),
    "mobilenet_v2": ({}, 64),
    "mobilenet_v3_small": ({}, 64),
    "mobilenet_v3_large": ({}, 64),
    "efficientnet_b0": ({}, 64),
    "efficientnet_v2_s": ({}, 64),
    "densenet121": ({}, 64),
    "convnext_tiny": ({}, 64),
    "vit_b_16": ({"image_size": 64}, 64),
    "swin_t": ({}, 64),
    "swin_v2_t": ({}, 64),
    "regnet_y_400mf": ({}, 64),
    "regnet_x_400mf": ({}, 64),
    "shufflenet_v2_x0_5": ({}, 64),
    "squeezenet1_1": ({}, 64),
    "mnasnet0_5": ({}, 64),
    "resnext50_32x4d": ({}, 64),
    "googlenet": ({"aux_logits": False, "init_weights": True}, 64),
    "inception_v3": ({"aux_logits": False, "init_weights": True}, 128),
    "alexnet": ({}, 64),
    "vgg11_bn": ({}, 64),
    "wide_resnet50_2": ({}, 64),
    # MaxViT's block and grid partitions (7x7) must divide every stage's plane: 224 px gives 56/28/14/7.
    "maxvit_t": ({}, 224),
}
# --image-size NAME=PX,...: another size for a torchvision model (e.g. where a BatchNorm's batch statistics
# over 2x2 planes at batch 2 are too few values for a float32 gradient check; docs/torchvision_coverage.md).
SIZE_OVERRIDES = {}


def set_image_sizes(spec):
    """Fills SIZE_OVERRIDES from "NAME=PX[,NAME=PX...]"; ValueError names a bad item."""
    for item in filter(None, spec.split(",")):
        name, _, px = item.partition("=")
        if name not in TORCHVISION or not px.isdigit():
            raise ValueError(f"--image-size wants NAME=PX with a torchvision model name, got '{item}'")
        SIZE_OVERRIDES[name] = int(px)
CUSTOM = ["lstm_classifier", "gru_classifier", "transformer_classifier"]
# timm (PyPI's timm in the same venv, not a project dependency): "timm.NAME" -> (timm.create_model keyword
# arguments, image size). --models timm runs them all. A diverse set: each brings op patterns the
# torchvision classifiers lack (weight standardization, split attention, relative position biases,
# lambda/halo/bottleneck attention, GRN, RepVGG-style branches, token mixing by pooling or MLP, ...).
# Transformers whose position tables fix the input size get img_size=64 (HaloNet needs 256 px: its
# halo attention blocks are 8x8 at the last stage).
TIMM = {
    "resnet18d": ({}, 64), "seresnext26d_32x4d": ({}, 64), "tf_efficientnet_b0": ({}, 64),
    "mobilenetv3_small_050": ({}, 64), "mobilenetv4_conv_small": ({}, 64), "lcnet_050": ({}, 64),
    "ghostnetv2_100": ({}, 64), "rexnet_100": ({}, 64), "regnetx_002": ({}, 64), "convnextv2_atto": ({}, 64),
    "deit_tiny_patch16_224": ({"img_size": 64}, 64), "levit_128s": ({"img_size": 64}, 64),
    "mobilevit_xxs": ({}, 64), "mobilevitv2_050": ({}, 64), "poolformer_s12": ({}, 64),
    "mixer_s16_224": ({"img_size": 64}, 64), "resmlp_12_224": ({"img_size": 64}, 64),
    "xcit_nano_12_p16_224": ({"img_size": 64}, 64), "dla34": ({}, 64), "hrnet_w18_small": ({}, 64),
    "dpn68": ({}, 64), "res2net50_26w_4s": ({}, 64), "resnest14d": ({}, 64), "skresnet18": ({}, 64),
    "nf_resnet26": ({}, 64), "ecaresnet26t": ({}, 64), "ese_vovnet19b_dw": ({}, 64),
    "efficientvit_b0": ({}, 64), "fastvit_t8": ({}, 64), "repvgg_a0": ({}, 64), "mobileone_s0": ({}, 64),
    "edgenext_xx_small": ({}, 64), "tiny_vit_5m_224": ({}, 64), "inception_next_atto": ({}, 64),
    "caformer_s18": ({}, 64), "lambda_resnet26t": ({}, 64), "halonet26t": ({"img_size": 256}, 256),
    "botnet26t_256": ({"img_size": 64}, 64), "cait_xxs24_224": ({"img_size": 64}, 64),
    "pit_ti_224": ({"img_size": 64}, 64), "eva02_tiny_patch14_224": ({"img_size": 56}, 56),
    "hgnetv2_b0": ({}, 64), "efficientvit_m0": ({"img_size": 64}, 64), "starnet_s1": ({}, 64),
    "mambaout_femto": ({}, 64), "fasternet_t0": ({}, 64), "repghostnet_050": ({}, 64),
}
DEFAULT_MODELS = ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "densenet121",
                  "convnext_tiny", "vit_b_16", "swin_t"] + CUSTOM + [
                  "resnet50", "shufflenet_v2_x0_5", "mnasnet0_5", "swin_v2_t", "alexnet", "regnet_y_400mf",
                  "squeezenet1_1", "googlenet", "inception_v3", "mobilenet_v3_large", "efficientnet_v2_s"]

# Run by --ort-python (the venv with onnxruntime and onnxconverter-common): argv = fp32 model, amptrain's
# fp16 model, folder for onnxconverter-common's model ("-": no onnxconverter-common run), then NAME=FILE.npy
# per input. Prints one JSON line.
ORT_SCRIPT = r'''
import json, sys, traceback
import numpy as np, onnx, onnxruntime as ort
fp32, ours, work = sys.argv[1:4]
feeds = {kv.split("=", 1)[0]: np.load(kv.split("=", 1)[1]) for kv in sys.argv[4:]}
def first_line(e):
    s = str(e).strip().splitlines()
    return type(e).__name__ + ": " + (s[0] if s else "")
def casts(g):
    n = 0
    for node in g.node:
        n += node.op_type == "Cast"
        for a in node.attribute:
            for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                n += casts(sub)
    return n
def run(path):
    so = ort.SessionOptions(); so.intra_op_num_threads = 2; so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0].astype(np.float64)
def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
res = {}
try:
    ref = run(fp32)
except Exception as e:
    print(json.dumps({"ort_fp32_error": first_line(e)})); sys.exit(0)
def judge(key, path):
    r = {}
    m = onnx.load(path)
    r["casts"] = casts(m.graph)
    try:
        onnx.checker.check_model(path, full_check=True); r["checker"] = "ok"
    except Exception as e:
        r["checker"] = first_line(e)
    try:
        r["rel_err"] = rel(run(path), ref)
    except Exception as e:
        r["ort_error"] = first_line(e)
    res[key] = r
if ours != "-":
    judge("ours", ours)
if work == "-":
    print(json.dumps(res)); sys.exit(0)
try:
    from onnxconverter_common import float16
    m = float16.convert_float_to_float16(onnx.load(fp32), keep_io_types=True)
    p = work + "/occ_fp16.onnx"
    onnx.save(m, p)
    judge("occ", p)
except Exception as e:
    res["occ"] = {"convert_error": first_line(e)}
print(json.dumps(res))
'''


# The accuracy-guided conversion (`convert --max-error`) of a model whose plain O2 fp16 conversion is
# outside CONVERT_TOL: amptrain searches on its own random validation input (seed 0, not this script's x),
# with a fifth of the tolerance as its bound, and ONNX Runtime judges the result on x as above. The margin
# is for inputs unlike the validation ones: random-weight nets amplify rounding very unevenly over inputs
# (efficientnet_v2_s's logits' norm ranges 46-4017 over random images; with half the tolerance as the bound
# its guided conversion was 1.0e-2 / 1.8e-2 on x, with a fifth 4.5e-3 / 4.7e-3).
GUIDED_BOUND = CONVERT_TOL / 5


def guided_conversion(args, sh, d, eval_onnx, feeds, res):
    conv = os.path.join(d, "eval_o2_fp16_guided.onnx")
    report = os.path.join(d, "convert_guided_report.json")
    p = sh([args.amptrain, "convert", eval_onnx, "-o", conv, "--amp", "O2", "--dtype", "fp16",
            "--max-error", str(GUIDED_BOUND), "--threads", str(args.threads), "--report", report],
           "convert_guided", args.step_timeout)
    g = {"bound": GUIDED_BOUND}
    res["guided"] = g
    if p.returncode != 0:
        g["convert_error"] = amptrain_error(p)
        return
    search = json.load(open(report))["precision_search"]
    g["fp32_nodes"] = search["chosen"]["fp32_nodes"]
    g["candidates"] = search["candidates"]
    g["search_error"] = search["chosen"]["error"]
    g["trials"] = search["trials"]
    try:
        q = subprocess.run([args.ort_python, "-c", ORT_SCRIPT, eval_onnx, conv, "-"] + feeds,
                           capture_output=True, text=True, timeout=args.step_timeout)
        lines = q.stdout.strip().splitlines()
        g["ort"] = json.loads(lines[-1]).get("ours", {}) if q.returncode == 0 and lines else \
            {"ort_script_error": (q.stderr.strip().splitlines() or ["?"])[-1]}
    except subprocess.TimeoutExpired:
        g["ort"] = {"ort_script_error": "timed out"}


# ---------------------------------------------------------------------------------------------------
# One model/exporter pair (runs in its own process: --case).


def first_line(e):
    s = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().splitlines()  # no terminal colours in the table
    return type(e).__name__ + ": " + (s[0].strip() if s else "")


def amptrain_error(proc):
    """The line of amptrain's output that says what went wrong (its error line, else the last line)."""
    lines = [l.strip() for l in (proc.stderr + "\n" + proc.stdout).splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower() or "unsupported" in l.lower() or "terminate" in l.lower():
            return l
    if proc.returncode < 0:
        return f"killed by signal {-proc.returncode}" + (f" after: {lines[-1]}" if lines else "")
    return lines[-1] if lines else f"exit code {proc.returncode}, no output"


def build(name, seed=0):
    """(model, example input) with random weights, seeded; every dropout-like probability set to 0."""
    import torch
    import torch.nn as nn
    import torchvision
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    if name in TORCHVISION:
        kw, size = TORCHVISION[name]
        size = SIZE_OVERRIDES.get(name, size)
        model = getattr(torchvision.models, name)(weights=None, num_classes=NUM_CLASSES, **kw)
        x = torch.randn(BATCH, 3, size, size, generator=gen)
        # ViT initializes its head to zeros: the logits would be 0 and every gradient but the head's too.
        for m in model.modules():
            if isinstance(m, nn.Linear) and not m.weight.detach().any():
                nn.init.normal_(m.weight, std=0.02)
    elif name == "lstm_classifier":
        class LSTMClassifier(nn.Module):
            """Token ids -> Embedding -> 2-layer LSTM (batch first) -> last step -> Linear."""
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(VOCAB, 32)
                self.lstm = nn.LSTM(32, 48, num_layers=2, batch_first=True)
                self.head = nn.Linear(48, NUM_CLASSES)

            def forward(self, tokens):
                y, _ = self.lstm(self.emb(tokens))
                return self.head(y[:, -1])
        model = LSTMClassifier()
        x = torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)
    elif name == "gru_classifier":
        class GRUClassifier(nn.Module):
            """Token ids -> Embedding -> bidirectional GRU (linear_before_reset, as PyTorch's) -> mean -> Linear."""
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(VOCAB, 32)
                self.gru = nn.GRU(32, 40, batch_first=True, bidirectional=True)
                self.head = nn.Linear(80, NUM_CLASSES)

            def forward(self, tokens):
                y, _ = self.gru(self.emb(tokens))
                return self.head(y.mean(dim=1))
        model = GRUClassifier()
        x = torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)
    elif name == "transformer_classifier":
        class TransformerClassifier(nn.Module):
            """Token ids -> Embedding + learned positions -> nn.TransformerEncoder (2 layers) -> mean -> Linear."""
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(VOCAB, 64)
                self.pos = nn.Parameter(torch.randn(1, SEQ, 64) * 0.02)
                layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, activation="gelu", batch_first=True)
                self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
                self.head = nn.Linear(64, NUM_CLASSES)

            def forward(self, tokens):
                return self.head(self.encoder(self.emb(tokens) + self.pos).mean(dim=1))
        model = TransformerClassifier()
        x = torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)
    elif name in model_zoo.ZOO:
        model, x = model_zoo.build(name, seed)
    elif name.startswith("timm.") and name[5:] in TIMM:
        import timm
        kw, size = TIMM[name[5:]]
        try:
            model = timm.create_model(name[5:], pretrained=False, num_classes=NUM_CLASSES, drop_rate=0.0,
                                      drop_path_rate=0.0, **kw)
        except TypeError:  # a model without stochastic depth takes no drop_path_rate
            model = timm.create_model(name[5:], pretrained=False, num_classes=NUM_CLASSES, drop_rate=0.0, **kw)
        x = torch.randn(BATCH, 3, size, size, generator=gen)
        # Mixer and ResMLP initialize their heads to zeros, as torchvision's ViT does (above).
        for m in model.modules():
            if isinstance(m, nn.Linear) and not m.weight.detach().any():
                nn.init.normal_(m.weight, std=0.02)
    else:
        raise SystemExit(f"unknown model {name}")
    # Dropout, StochasticDepth (row mode is random in training) and attention dropout: all off, so that
    # a training export and the PyTorch reference compute the same function.
    for m in model.modules():
        if isinstance(m, nn.modules.dropout._DropoutNd) or type(m).__name__ == "StochasticDepth":
            m.p = 0.0
        for attr in ("dropout", "attention_dropout"):
            if isinstance(getattr(m, attr, None), float):
                setattr(m, attr, 0.0)
    return model, x


def calibrate_bn(model, x):
    """BN running statistics := the statistics of 16 other random inputs (one training-mode forward).
    With the initial mean 0 / variance 1, eval-mode activations of a randomly initialized net shrink
    or grow layer by layer (GoogLeNet's logits end up ~1e-10 of its biases), which would leave the
    inference check comparing biases. (Statistics of x itself would normalize x's two images against
    each other, as ill-conditioned as training mode at batch 2.)"""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not x.is_floating_point() or not bns:  # (a model without BN may not be batch-first)
        return
    x = torch.randn((16,) + tuple(x.shape[1:]), generator=torch.Generator().manual_seed(3))
    saved = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average: after one batch, its statistics
    model.train()
    with torch.no_grad():
        model(x)
    for m, mom in zip(bns, saved):
        m.momentum = mom


def export(model, x, path, exporter, train):
    """The exporter's defaults for an eval export; nothing folded for a training export (see
    docs/BRING_YOUR_OWN_MODEL.md)."""
    import torch
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "ts":
            kw = dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False) if train else {}
            torch.onnx.export(model, (x,), path, dynamo=False, input_names=["input"], output_names=["logits"], **kw)
            return None
        kw = {"optimize": False} if train else {}
        if exporter != "dynamo":  # dynamoNN: the dynamo exporter at opset NN (23+ writes Attention, RMSNormalization)
            kw["opset_version"] = int(exporter[len("dynamo"):])
        prog = torch.onnx.export(model, (x,), path, dynamo=True, **kw)
        return prog


def onnx_io(path):
    """(data input names, output names, opset) of an ONNX file (initializers are not data inputs)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    opset = max((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), default=None)
    return ([i.name for i in m.graph.input if i.name not in inits], [o.name for o in m.graph.output], opset,
            [i.name for i in m.graph.initializer])


def rel_l2(a, b):
    import numpy as np
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def out_file(d, name):
    for c in "/\\:":
        name = name.replace(c, "_")
    return os.path.join(d, name + ".npy")


def run_case(args):
    import numpy as np
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    d = args.dir
    os.makedirs(d, exist_ok=True)
    res = {"model": args.case, "exporter": args.exporter}

    def rel(arg):
        """A path argument (or NAME=path) relative to the repository, where it lies inside it."""
        k, v = arg.split("=", 1) if "=" in arg else ("", arg)
        if v.startswith("/") and not os.path.relpath(v, ROOT).startswith(".."):
            v = os.path.relpath(v, ROOT)
        return (k + "=" if k else "") + v

    def save():
        with open(os.path.join(d, "result.json"), "w") as f:
            json.dump(res, f)

    def sh(cmd, key, budget):
        """Runs an amptrain command; records it (relative paths, for reproduction) and its seconds."""
        t0 = time.time()
        try:
            p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=budget)
        except subprocess.TimeoutExpired:
            p = subprocess.CompletedProcess(cmd, -9, "", f"timed out after {budget:.0f} s")
        res[key + "_cmd"] = " ".join(rel(c) for c in cmd)
        res[key + "_s"] = round(time.time() - t0, 1)
        return p

    model, x = build(args.case)
    res["params"] = sum(p.numel() for p in model.parameters())
    res["input"] = list(x.shape)
    # ---- 1. inference -------------------------------------------------------------------------------
    calibrate_bn(model, x)
    model.eval()
    m64 = copy.deepcopy(model).double()
    xd = x.double() if x.is_floating_point() else x
    with torch.enable_grad():  # grad on: keeps nn.TransformerEncoderLayer off its fused fast path
        ref64 = m64(xd).detach().numpy()
        # PyTorch's own float32 error against float64: the yardstick for a model whose conditioning puts
        # even PyTorch's fp32 output above INFER_TOL (random-weight nets amplify rounding layer by layer).
        res["torch32_rel_err"] = rel_l2(model(x).detach().numpy(), ref64)
    del m64
    eval_onnx = os.path.join(d, "eval.onnx")
    t0 = time.time()
    try:
        export(model, x, eval_onnx, args.exporter, train=False)
        res["export_s"] = round(time.time() - t0, 1)
        inputs, outputs, res["opset"], _ = onnx_io(eval_onnx)
    except Exception as e:
        res["export_error"] = first_line(e)
        save()
        inputs = None
    if inputs is not None:
        xf = os.path.join(d, "x.npy")
        np.save(xf, x.numpy())
        feeds = [f"{inputs[0]}={xf}"]
        od = os.path.join(d, "run")
        shutil.rmtree(od, ignore_errors=True)
        p = sh([args.amptrain, "run", eval_onnx, "--input", feeds[0], "--output-dir", od,
                "--threads", str(args.threads)], "run", args.step_timeout)
        if p.returncode != 0:
            res["run_error"] = amptrain_error(p)
        else:
            y = np.load(out_file(od, outputs[0]))
            res["run_rel_err"] = rel_l2(y, ref64)
            # How much of the logits depends on the input (near 0: the output is ~the head's bias).
            res["logit_spread"] = float(np.linalg.norm(ref64 - ref64.mean(0)) / max(np.linalg.norm(ref64), 1e-300))
            res["run_ok"] = res["run_rel_err"] <= INFER_TOL
            # Within the fixed bound, or (marked ok*) within 10x PyTorch float32's own error, the gradient
            # check's yardstick, where PyTorch float32 itself misses the fixed bound.
            res["run_ok_yardstick"] = res["run_rel_err"] <= max(INFER_TOL, 10 * res["torch32_rel_err"])
        save()
        # ---- 3. conversion (before the gradients: it is cheap) ----------------------------------------
        if not args.skip_convert:
            conv = os.path.join(d, "eval_o2_fp16.onnx")
            p = sh([args.amptrain, "convert", eval_onnx, "-o", conv, "--amp", "O2", "--dtype", "fp16",
                    "--report", os.path.join(d, "convert_report.json")], "convert", args.step_timeout)
            if p.returncode != 0:
                res["convert_error"] = amptrain_error(p)
            try:
                q = subprocess.run([args.ort_python, "-c", ORT_SCRIPT, eval_onnx,
                                    conv if p.returncode == 0 else "-", d] + feeds,
                                   capture_output=True, text=True, timeout=args.step_timeout)
                lines = q.stdout.strip().splitlines()
                res["ort"] = json.loads(lines[-1]) if q.returncode == 0 and lines else \
                    {"ort_script_error": (q.stderr.strip().splitlines() or ["?"])[-1]}
            except subprocess.TimeoutExpired:
                res["ort"] = {"ort_script_error": "timed out"}
            save()
            ours = res["ort"].get("ours", {})
            if ours.get("rel_err", 0.0) > CONVERT_TOL:
                guided_conversion(args, sh, d, eval_onnx, feeds, res)
                save()
    # ---- 2. gradients ---------------------------------------------------------------------------------
    if args.skip_grad:
        return
    model, x = build(args.case)  # a fresh model: the same seeded weights
    model.train()
    train_onnx = os.path.join(d, "train.onnx")
    t0 = time.time()
    try:
        prog = export(model, x, train_onnx, args.exporter, train=True)
        res["grad_export_s"] = round(time.time() - t0, 1)
        inputs, outputs, _, inits = onnx_io(train_onnx)
    except Exception as e:
        res["grad_export_error"] = first_line(e)
        save()
        return
    # ONNX initializer name -> PyTorch parameter name.
    pnames = [n for n, _ in model.named_parameters()]
    to_torch = {n: n for n in pnames}
    if prog is not None:
        try:
            for k, v in prog.exported_program.graph_signature.inputs_to_parameters.items():
                to_torch.setdefault(k, v)
        except Exception:
            pass
    # References, from the model as exported (a TorchScript training export ran one forward, which only
    # moved BN running statistics: training-mode BN does not read them).
    gen = torch.Generator().manual_seed(2)
    # One label per row of the logits (a sequence-major model's input leads with time, not batch).
    labels = torch.randint(0, NUM_CLASSES, (ref64.shape[0],), generator=gen, dtype=torch.int64)
    grads = {}
    for dt in (torch.float64, torch.float32):
        m = copy.deepcopy(model).to(dt).train()
        loss = F.cross_entropy(m(x.to(dt) if x.is_floating_point() else x), labels)
        loss.backward()
        grads[dt] = {n: p.grad.detach().double().numpy() if p.grad is not None else None
                     for n, p in m.named_parameters()}
        res["loss64" if dt == torch.float64 else "loss32"] = loss.item()
        del m
    xf, yf = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(xf, x.numpy())
    np.save(yf, labels.numpy())
    gd = os.path.join(d, "grad")
    shutil.rmtree(gd, ignore_errors=True)
    p = sh([args.amptrain, "grad", train_onnx, "--input", f"{inputs[0]}={xf}", "--labels", yf,
            "--output-dir", gd, "--threads", str(args.threads)], "grad", args.step_timeout)
    if p.returncode != 0:
        res["grad_error"] = amptrain_error(p)
        save()
        return
    res["grad_loss"] = float(np.load(os.path.join(gd, "loss.npy")))
    res["grad_loss_rel_err"] = abs(res["grad_loss"] - res["loss64"]) / abs(res["loss64"])
    res["torch32_loss_rel_err"] = abs(res["loss32"] - res["loss64"]) / abs(res["loss64"])
    files = {f[:-4] for f in os.listdir(os.path.join(gd, "grads"))}
    mapped = {to_torch.get(f, f): f for f in files}
    res["grad_params"] = len(pnames)
    # A parameter PyTorch gives no gradient either (it reaches the loss only through indices, e.g.
    # the scores of a sort or top-k) is not missing: amptrain names it as not trained, with the reason.
    res["grad_missing"] = sorted(n for n in pnames if n not in mapped and grads[torch.float64][n] is not None)
    res["grad_none_in_torch"] = sorted(n for n in pnames if n not in mapped and grads[torch.float64][n] is None)
    res["grad_unmapped"] = sorted(f for f in files if to_torch.get(f, f) not in grads[torch.float64])
    worst, bad = (0.0, None), []
    for n in pnames:
        if n not in mapped:
            continue
        r64, r32 = grads[torch.float64][n], grads[torch.float32][n]
        if r64 is None:  # a parameter that does not reach the loss in PyTorch
            r64 = r32 = 0.0
        ours = np.load(os.path.join(gd, "grads", mapped[n] + ".npy")).astype(np.float64)
        if np.shape(ours) != np.shape(r64) and np.size(r64) > 1:
            bad.append([n, "shape " + str(list(np.shape(ours))) + " != " + str(list(np.shape(r64)))])
            continue
        e_ours, e32, n64 = (float(np.linalg.norm(ours - r64)), float(np.linalg.norm(r32 - r64)),
                            float(np.linalg.norm(r64)))
        bound = max(1e-4 * n64, 10 * e32, 1e-30)
        ratio = e_ours / bound if np.isfinite(e_ours) else float("inf")
        if ratio > worst[0] or worst[1] is None:
            worst = (ratio, n)
        if ratio > 1:
            bad.append([n, ratio, e_ours / max(n64, 1e-300), e32 / max(n64, 1e-300)])
    res["grad_worst_ratio"], res["grad_worst_param"] = worst
    res["grad_violations"] = bad
    res["grad_ok"] = not bad and not res["grad_missing"]
    shutil.rmtree(gd, ignore_errors=True)  # gradients of the larger models take hundreds of MB
    save()


# ---------------------------------------------------------------------------------------------------
# The driver: one process per pair, then the table.


def fmt_e(v):
    return f"{v:.1e}" if v is not None else ""


def cell_infer(r):
    if "export_error" in r:
        return "export fails: `" + r["export_error"][:160] + "`"
    if "run_error" in r:
        return "**amptrain fails**: `" + r["run_error"][:200] + "`"
    if "run_rel_err" in r:
        flat = " (logits ~constant: spread %.0e)" % r["logit_spread"] if r.get("logit_spread", 1) < 1e-3 else ""
        t32 = f" (torch32 {fmt_e(r['torch32_rel_err'])})" if "torch32_rel_err" in r else ""
        verdict = "ok " if r["run_ok"] else "ok* " if r.get("run_ok_yardstick") else "**wrong** "
        return verdict + fmt_e(r["run_rel_err"]) + t32 + flat
    return r.get("case_error", "not run")


def cell_grad(r):
    if "grad_export_error" in r:
        return "export fails: `" + r["grad_export_error"][:160] + "`"
    if "grad_error" in r:
        return "**amptrain fails**: `" + r["grad_error"][:200] + "`"
    if "grad_params" not in r:
        return r.get("case_error", "not run") if "export_error" not in r or "case_error" in r else "not run"
    v = len(r["grad_violations"])
    s = "ok" if r["grad_ok"] else "**fail**"
    none = r.get("grad_none_in_torch", [])
    untrained = f" ({len(none)} without a gradient in PyTorch either, named as not trained)" if none else ""
    return (f"{s} {r['grad_params']} params, {len(r['grad_missing'])} missing{untrained}, {v} over, "
            f"worst {r['grad_worst_ratio']:.2g}; loss {r['grad_loss_rel_err']:.0e} "
            f"(torch32 {r['torch32_loss_rel_err']:.0e})")


def cell_convert(r):
    if "export_error" in r:
        return ""
    o = r.get("ort", {})
    if "convert_error" in r:
        s = "**amptrain fails**: `" + r["convert_error"][:200] + "`"
    elif "ours" in o:
        u = o["ours"]
        if u.get("checker") != "ok":
            s = "**checker**: `" + u["checker"][:160] + "`"
        elif "ort_error" in u:
            s = "**ORT fails**: `" + u["ort_error"][:160] + "`"
        else:
            s = ("ok " if u["rel_err"] <= CONVERT_TOL else "**err** ") + fmt_e(u["rel_err"])
        s += f", {u['casts']} Cast"
    elif "ort_fp32_error" in o:
        return "ORT cannot run the fp32 export: `" + o["ort_fp32_error"][:160] + "`"
    elif "ort_script_error" in o:
        return "ORT check failed: `" + o["ort_script_error"][:160] + "`"
    else:
        return r.get("case_error", "not run")
    c = o.get("occ", {})
    if "convert_error" in c:
        s += " / occ fails: `" + c["convert_error"][:120] + "`"
    elif c:
        e = ("ORT fails: `" + c["ort_error"][:120] + "`") if "ort_error" in c else fmt_e(c.get("rel_err"))
        chk = "" if c.get("checker") == "ok" else " (checker fails)"
        s += f" / occ {e}, {c['casts']} Cast{chk}"
    g = r.get("guided")
    if g:
        if "convert_error" in g:
            s += "; guided: **amptrain fails**: `" + g["convert_error"][:160] + "`"
        else:
            u = g.get("ort", {})
            if "rel_err" in u:
                e = ("ok " if u["rel_err"] <= CONVERT_TOL and u.get("checker") == "ok" else "**err** ") + \
                    fmt_e(u["rel_err"])
            else:
                e = "**ORT fails**: `" + str(u.get("ort_error", u.get("ort_script_error", "?")))[:120] + "`"
            s += (f"; guided (`--max-error {g['bound']:g}`): {e}, {u.get('casts', '?')} Cast, "
                  f"{g['fp32_nodes']} of {g['candidates']} low nodes kept fp32")
    return s


def write_markdown(path, results, args):
    import onnx
    import torch
    import torchvision
    try:
        ort_v = subprocess.run([args.ort_python, "-c", "import onnxruntime, onnxconverter_common as c; "
                                "print(onnxruntime.__version__, c.__version__)"],
                               capture_output=True, text=True).stdout.split()
    except Exception:
        ort_v = ["?", "?"]
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    try:  # the binary and the tree it was built from (a rebuild during a run would mix results)
        head = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h %cs"], capture_output=True,
                              text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "-uno"], capture_output=True,
                               text=True).stdout.strip()
        built = datetime.datetime.fromtimestamp(os.path.getmtime(args.amptrain)).strftime("%Y-%m-%d %H:%M")
        binary = f"amptrain built {built} from commit {head}" + (" plus uncommitted changes" if dirty else "")
    except Exception:
        binary = "amptrain"
    zoo = all(r["model"] in model_zoo.ZOO for r in results)
    timm_set = all(r["model"].startswith("timm.") for r in results)
    try:
        import timm
        timm_v = f", timm {timm.__version__}" if timm_set else ""
    except ImportError:
        timm_v = ""
    lines = [
        "# Coverage of current PyTorch exports (" +
        ("tools/bench/model_zoo.py: small models beyond the torchvision classifiers" if zoo else
         "timm classifiers (random weights)" if timm_set else "torchvision classifiers") + ")",
        "",
        f"- Date: {datetime.date.today().isoformat()}; machine: {cpu}, {os.cpu_count()} cores "
        f"({platform.machine()}); {binary}, with `--threads {args.threads}`; everything under `nice -n 19`.",
        f"- torch {torch.__version__}, torchvision {torchvision.__version__}, onnx {onnx.__version__}, "
        f"onnxruntime {ort_v[0] if ort_v else '?'}, onnxconverter-common {ort_v[1] if len(ort_v) > 1 else '?'}{timm_v}.",
        "- Command: `nice -n 19 .cache/torch-pypi/bin/python tools/bench/torchvision_coverage.py" +
        (" --models zoo --out build/zoo_coverage --md docs/zoo_coverage.md" if zoo else
         " --models timm --out build/timm_coverage --md docs/timm_coverage.md" if timm_set else "") + "`" +
        (" (this table was recorded in parts, with `--append`)" if args.append or args.table_only else "") +
        f"; {len(results)} model/exporter pairs, "
        f"{sum(r.get('case_s', 0) for r in results) / 60:.1f} min of case wall time in all.",
        "- Random weights (seed 0), 10 classes, batch 2; Dropout, StochasticDepth and attention dropout p=0.",
        *(["- Exporters: `ts` TorchScript, `dynamo` the dynamo exporter at its default opset, `dynamoNN` the "
           "dynamo exporter with `opset_version=NN` (from 23 it writes Attention for scaled_dot_product_attention "
           "and RMSNormalization for nn.RMSNorm; from 21 GroupNormalization)."]
          if any(r["exporter"].startswith("dynamo") and r["exporter"] != "dynamo" for r in results) else []),
        "- **Inference**: BN running statistics set to those of 16 other random images, then the exporter's default "
        "eval export, `amptrain run` vs PyTorch float64 eval output, relative L2 (ok <= 1e-4; *ok\\** where "
        "PyTorch float32 itself is above 1e-4 and ours is within 10x PyTorch float32's error, shown as torch32).",
        "- **Gradients**: training export (ts: `TrainingMode.TRAINING, do_constant_folding=False`; dynamo: "
        "`model.train()`, `optimize=False`), `amptrain grad` vs PyTorch float64; a tensor passes when "
        "`|ours-ref64| <= max(1e-4 |ref64|, 10 |torch32-ref64|)`; *worst* is the largest ratio of the "
        "error to that bound (<= 1 passes), *over* the tensors above it.",
        "- **Convert**: `amptrain convert --amp O2 --dtype fp16` of the eval export: checker, ONNX Runtime "
        "relative L2 vs the fp32 model in ONNX Runtime (ok <= 1e-2), Cast nodes; then onnxconverter-common "
        "(`occ`, `convert_float_to_float16(keep_io_types=True)`): its error and Cast nodes. Where ours is "
        f"above 1e-2, also `convert --max-error {GUIDED_BOUND:g}` (*guided*: amptrain measures on its own random input, "
        "seed 0, and keeps the fewest leading nodes fp32), judged by ONNX Runtime on this input as above.",
        "",
        "| model | input | params | exporter | opset | inference | gradients | convert O2 fp16 (ours / occ) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        inp = "x".join(str(v) for v in r.get("input", []))
        prm = f"{r['params'] / 1e6:.2f}M" if "params" in r else ""
        lines.append(re.sub(r"\x1b\[[0-9;]*m", "", f"| {r['model']} | {inp} | {prm} | {r['exporter']} | "
                            f"{r.get('opset', '')} | {cell_infer(r)} | {cell_grad(r)} | {cell_convert(r)} |"))
    # Every failure with its command, for reproduction.
    fails = []
    for r in results:
        for key, err in (("run", r.get("run_error")), ("grad", r.get("grad_error")),
                         ("convert", r.get("convert_error"))):
            if err:
                fails.append(f"- {r['model']} {r['exporter']} `{key}`: `{err}`  \n  `{r.get(key + '_cmd', '')}`")
        if r.get("run_ok") is False:
            fails.append(f"- {r['model']} {r['exporter']} `run`: relative error {r['run_rel_err']:.2e}  \n"
                         f"  `{r.get('run_cmd', '')}`")
        for v in r.get("grad_violations", []):
            fails.append(f"- {r['model']} {r['exporter']} `grad`: {v[0]}: " +
                         (f"ratio {v[1]:.3g} (ours rel {v[2]:.2e}, torch32 rel {v[3]:.2e})"
                          if isinstance(v[1], float) else str(v[1])))
        if r.get("grad_missing"):
            fails.append(f"- {r['model']} {r['exporter']} `grad`: no gradient for {len(r['grad_missing'])} "
                         f"params, e.g. {', '.join(r['grad_missing'][:3])}")
        if "case_error" in r:
            fails.append(f"- {r['model']} {r['exporter']}: {r['case_error']}")
    if fails:
        lines += ["", "## Failures (files under the --out folder)", ""] + fails
    # Keep hand-written notes below the marker of an existing file.
    notes = ""
    if os.path.exists(path):
        old = open(path).read()
        if "<!-- notes -->" in old:
            notes = old[old.index("<!-- notes -->"):]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n" + ("\n" + notes if notes else ""))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(DEFAULT_MODELS))
    p.add_argument("--exporters", default=",".join(EXPORTERS))
    p.add_argument("--out", default=os.path.join(ROOT, "build", "torchvision_coverage"))
    p.add_argument("--md", default=os.path.join(ROOT, "docs", "torchvision_coverage.md"))
    p.add_argument("--skip-grad", action="store_true")
    p.add_argument("--skip-convert", action="store_true")
    p.add_argument("--timeout", type=float, default=600, help="seconds per model/exporter pair")
    p.add_argument("--amptrain", default=os.path.join(ROOT, "build", "tools", "amptrain"))
    p.add_argument("--ort-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--image-size", default="", help="NAME=PX[,NAME=PX...]: input size overrides")
    p.add_argument("--append", action="store_true", help="keep the pairs already in OUT/results.jsonl")
    p.add_argument("--table-only", action="store_true", help="only rewrite --md from OUT/results.jsonl")
    # Internal: one pair in this process.
    p.add_argument("--case", help=argparse.SUPPRESS)
    p.add_argument("--exporter", help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    p.add_argument("--step-timeout", type=float, default=600, help=argparse.SUPPRESS)
    args = p.parse_args()
    args.amptrain = os.path.abspath(args.amptrain)
    try:
        set_image_sizes(args.image_size)
    except ValueError as e:
        p.error(str(e))
    if args.case:
        run_case(args)
        return
    # "zoo" stands for every model of model_zoo.py, "timm" for every model of TIMM.
    sets = {"zoo": list(model_zoo.ZOO), "timm": ["timm." + t for t in TIMM]}
    args.models = ",".join(",".join(sets[m]) if m in sets else m for m in args.models.split(","))
    os.makedirs(args.out, exist_ok=True)
    jsonl = os.path.join(args.out, "results.jsonl")
    results = []
    if (args.append or args.table_only) and os.path.exists(jsonl):
        results = [json.loads(l) for l in open(jsonl) if l.strip()]
    t_start = time.time()
    with open(jsonl, "a" if args.append or args.table_only else "w") as out:
        for model in ([] if args.table_only else args.models.split(",")):
            for exporter in args.exporters.split(","):
                d = os.path.join(args.out, f"{model}.{exporter}")
                shutil.rmtree(d, ignore_errors=True)
                cmd = [sys.executable, os.path.abspath(__file__), "--case", model, "--exporter", exporter,
                       "--dir", d, "--amptrain", args.amptrain, "--ort-python", args.ort_python,
                       "--threads", str(args.threads), "--step-timeout", str(args.timeout),
                       "--image-size", args.image_size]
                cmd += ["--skip-grad"] * args.skip_grad + ["--skip-convert"] * args.skip_convert
                t0 = time.time()
                err = None
                # Its own process group, so that a timeout also ends the amptrain or ORT process it runs.
                q = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
                try:
                    _, stderr = q.communicate(timeout=args.timeout)
                    if q.returncode != 0:
                        tail = [l for l in stderr.strip().splitlines() if l.strip()]
                        err = f"case process exit {q.returncode}: " + (tail[-1] if tail else "")
                except subprocess.TimeoutExpired:
                    os.killpg(q.pid, 9)
                    q.communicate()
                    err = f"case timed out after {args.timeout:.0f} s"
                r = {"model": model, "exporter": exporter}
                if os.path.exists(os.path.join(d, "result.json")):
                    r.update(json.load(open(os.path.join(d, "result.json"))))
                if err:
                    r["case_error"] = err
                r["case_s"] = round(time.time() - t0, 1)
                results.append(r)
                out.write(json.dumps(r) + "\n")
                out.flush()
                print(f"{model:24s} {exporter:6s} {r['case_s']:6.1f}s  infer: {cell_infer(r)[:70]} | "
                      f"grad: {cell_grad(r)[:60]} | convert: {cell_convert(r)[:60]}", flush=True)
    # One row per pair and input size (the latest), in the order of the model list. A case that failed
    # before it knew its input size replaces every earlier row of its pair, and any later row replaces it.
    latest = {}
    for r in results:
        pair = (r["model"], r["exporter"])
        if r.get("input"):
            latest.pop(pair + ((),), None)
        else:
            latest = {k: v for k, v in latest.items() if k[:2] != pair}
        latest[pair + (tuple(r.get("input", [])),)] = r
    order = {m: i for i, m in enumerate(DEFAULT_MODELS)}
    rows = sorted(latest.values(), key=lambda r: (order.get(r["model"], len(order)), r["model"], r.get("input", []),
                                                  EXPORTERS.index(r["exporter"]) if r["exporter"] in EXPORTERS else 9))
    write_markdown(args.md, rows, args)
    print(f"{len(rows)} pairs ({(time.time() - t_start) / 60:.1f} min this run) -> {jsonl}, {args.md}")


if __name__ == "__main__":
    main()
