#!/usr/bin/env python3
"""Hugging Face transformers models (random init, tiny configs) through amptrain: inference and gradients.

    P=.cache/torch-pypi/bin/python   # PyPI torch; `$P -m pip install transformers` once (not a project dependency)
    $P tools/bench/hf_transformers.py [--models bert,gpt2,...] [--amptrain build/tools/amptrain] [--out build/hf]

For each model (the default list: BERT, DistilBERT, RoBERTa, GPT-2, Llama with grouped-query attention,
ViT, ConvNeXt, MobileViT; --models more adds ALBERT, ELECTRA, DeBERTa-v2, MPNet, BART, T5, Mistral,
Qwen2, Qwen3, Phi, Gemma, Gemma2, GPT-NeoX, OPT, BLOOM, Falcon, StableLM, ModernBERT, Funnel, DeiT,
BEiT, Swin, SegFormer, DINOv2, PVTv2, CvT, MobileNetV2, EfficientNet, wav2vec 2.0 and Whisper's
encoder; --models all runs both) as their *ForSequenceClassification / *ForImageClassification /
*ForAudioClassification heads; all-zero parameters, such as zero-initialized heads, get N(0, 0.1)
values so that nothing is trivially 0):
  - inference: the TorchScript (opset 17) and dynamo exports of the eval model run by `amptrain run`,
    against the model's float64 output (relative L2; ok below 1e-4);
  - gradients: the dynamo `optimize=False` training export, `amptrain grad`
    (mean cross-entropy on fixed labels) against a float64 PyTorch reference; each parameter's error
    must be within 10x PyTorch float32's own error against the same reference, or 1e-4 relative.
    Gradients for initializers that are not PyTorch parameters (buffers such as Llama's
    rotary inv_freq) are listed as "extra".
  - conversion: `amptrain convert --amp O2` (fp16) of each export, run by ONNX Runtime (through
    --ort-python, a Python with onnxruntime: the project's .venv) against the fp32 export in ONNX
    Runtime (relative L2; ok below 1e-2), with the number of Casts in the converted model.
Prints a markdown table; exits non-zero on a failure.
"""
import argparse
import copy
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import transformers as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = "bert,distilbert,roberta,gpt2,llama,vit,convnext,mobilevit"


TEXT_SIZES = dict(vocab_size=1000, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
# name -> (model class, config class, config arguments)
MODELS = {
    "bert": ("BertForSequenceClassification", "BertConfig",
             dict(TEXT_SIZES, hidden_size=64, max_position_embeddings=64)),
    "distilbert": ("DistilBertForSequenceClassification", "DistilBertConfig",
                   dict(vocab_size=1000, dim=64, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=64)),
    "roberta": ("RobertaForSequenceClassification", "RobertaConfig",
                dict(TEXT_SIZES, hidden_size=64, max_position_embeddings=80)),
    "gpt2": ("GPT2ForSequenceClassification", "GPT2Config",
             dict(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=64, pad_token_id=0)),
    "llama": ("LlamaForSequenceClassification", "LlamaConfig",
              dict(TEXT_SIZES, hidden_size=64, num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0)),
    "vit": ("ViTForImageClassification", "ViTConfig",
            dict(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                 num_attention_heads=4, intermediate_size=128)),
    "convnext": ("ConvNextForImageClassification", "ConvNextConfig",
                 dict(num_channels=3, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], image_size=64)),
    "mobilevit": ("MobileViTForImageClassification", "MobileViTConfig",
                  dict(image_size=64, hidden_sizes=[32, 48, 64], neck_hidden_sizes=[8, 16, 24, 24, 32, 40, 64])),
    # --models more: further text encoders and decoders, vision and audio models.
    "albert": ("AlbertForSequenceClassification", "AlbertConfig",  # one layer's weights shared by both layers
               dict(TEXT_SIZES, embedding_size=32, hidden_size=64, max_position_embeddings=64)),
    "electra": ("ElectraForSequenceClassification", "ElectraConfig",
                dict(TEXT_SIZES, embedding_size=32, hidden_size=64, max_position_embeddings=64)),
    "deberta_v2": ("DebertaV2ForSequenceClassification", "DebertaV2Config",  # disentangled relative attention
                   dict(TEXT_SIZES, hidden_size=64, max_position_embeddings=64, relative_attention=True,
                        position_buckets=32, pos_att_type=["p2c", "c2p"])),
    "mpnet": ("MPNetForSequenceClassification", "MPNetConfig",
              dict(TEXT_SIZES, hidden_size=64, max_position_embeddings=64)),
    "bart": ("BartForSequenceClassification", "BartConfig",  # encoder-decoder; classifies the <eos> state
             dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                  max_position_embeddings=64, pad_token_id=1, eos_token_id=2, bos_token_id=0)),
    "t5": ("T5ForSequenceClassification", "T5Config",  # relative position buckets (Log), encoder-decoder
           dict(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4,
                pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)),
    "mistral": ("MistralForSequenceClassification", "MistralConfig",
                dict(TEXT_SIZES, hidden_size=64, num_key_value_heads=2, max_position_embeddings=64,
                     pad_token_id=0, sliding_window=8)),
    "qwen2": ("Qwen2ForSequenceClassification", "Qwen2Config",  # q/k/v biases
              dict(TEXT_SIZES, hidden_size=64, num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0)),
    "qwen3": ("Qwen3ForSequenceClassification", "Qwen3Config",  # RMSNorm on queries and keys
              dict(TEXT_SIZES, hidden_size=64, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                   pad_token_id=0)),
    "phi": ("PhiForSequenceClassification", "PhiConfig",  # partial rotary, parallel attention and MLP
            dict(TEXT_SIZES, hidden_size=64, max_position_embeddings=64, pad_token_id=0, partial_rotary_factor=0.5)),
    "gemma": ("GemmaForSequenceClassification", "GemmaConfig",  # RMSNorm (1 + w), scaled embeddings
              dict(TEXT_SIZES, hidden_size=64, num_key_value_heads=1, head_dim=16, max_position_embeddings=64,
                   pad_token_id=0)),
    "gemma2": ("Gemma2ForSequenceClassification", "Gemma2Config",  # logit soft-capping, sandwich norms
               dict(TEXT_SIZES, hidden_size=64, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                    pad_token_id=0, sliding_window=8)),
    "gpt_neox": ("GPTNeoXForSequenceClassification", "GPTNeoXConfig",
                 dict(TEXT_SIZES, hidden_size=64, max_position_embeddings=64, pad_token_id=0, rotary_pct=0.25)),
    "opt": ("OPTForSequenceClassification", "OPTConfig",
            dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                 word_embed_proj_dim=64, max_position_embeddings=64, pad_token_id=0)),
    "bloom": ("BloomForSequenceClassification", "BloomConfig",  # ALiBi position biases
              dict(vocab_size=1000, hidden_size=64, n_layer=2, n_head=4, pad_token_id=0)),
    "falcon": ("FalconForSequenceClassification", "FalconConfig",
               dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, pad_token_id=0,
                    new_decoder_architecture=False, multi_query=True, parallel_attn=True)),
    "stablelm": ("StableLmForSequenceClassification", "StableLmConfig",
                 dict(TEXT_SIZES, hidden_size=64, num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0)),
    "modernbert": ("ModernBertForSequenceClassification", "ModernBertConfig",  # local/global attention, GeGLU
                   dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=64, local_attention=8, pad_token_id=0)),
    "funnel": ("FunnelForSequenceClassification", "FunnelConfig",  # pooled queries between blocks
               dict(vocab_size=1000, block_sizes=[1, 1], num_decoder_layers=1, d_model=64, n_head=4, d_head=16,
                    d_inner=128)),
    "deit": ("DeiTForImageClassification", "DeiTConfig",
             dict(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=128)),
    "beit": ("BeitForImageClassification", "BeitConfig",  # relative position bias tables
             dict(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=128, use_relative_position_bias=True)),
    "swin": ("SwinForImageClassification", "SwinConfig",
             dict(image_size=64, patch_size=4, num_channels=3, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
                  window_size=4)),
    "segformer": ("SegformerForImageClassification", "SegformerConfig",
                  dict(num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[4, 2], hidden_sizes=[16, 32],
                       num_attention_heads=[1, 2], decoder_hidden_size=32)),
    "dinov2": ("Dinov2ForImageClassification", "Dinov2Config",  # position table interpolated (bicubic)
               dict(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=4, mlp_ratio=2)),
    "pvt_v2": ("PvtV2ForImageClassification", "PvtV2Config",
               dict(num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[4, 2], hidden_sizes=[16, 32],
                    num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2])),
    # CvT: convolutional projections, BN in the attention; transformers indexes stage s's drop-path rates
    # (depth[s] of them) by s, so stage 1 needs a depth of 2.
    "cvt": ("CvtForImageClassification", "CvtConfig",
            dict(num_channels=3, embed_dim=[16, 32], num_heads=[1, 2], depth=[1, 2], patch_sizes=[7, 3],
                 patch_stride=[4, 2], patch_padding=[2, 1], mlp_ratio=[2.0, 2.0], attention_drop_rate=[0.0, 0.0],
                 drop_rate=[0.0, 0.0], drop_path_rate=[0.0, 0.0], qkv_bias=[True, True], cls_token=[False, True],
                 qkv_projection_method=["dw_bn", "dw_bn"], kernel_qkv=[3, 3], padding_kv=[1, 1],
                 stride_kv=[2, 2], padding_q=[1, 1], stride_q=[1, 1])),
    "mobilenet_v2": ("MobileNetV2ForImageClassification", "MobileNetV2Config",  # TensorFlow "same" padding
                     dict(num_channels=3, image_size=64, depth_multiplier=0.35, tf_padding=True)),
    "efficientnet": ("EfficientNetForImageClassification", "EfficientNetConfig",
                     dict(num_channels=3, image_size=64, width_coefficient=0.25, depth_coefficient=0.25,
                          hidden_dim=320)),
    "wav2vec2": ("Wav2Vec2ForSequenceClassification", "Wav2Vec2Config",  # GroupNorm, weight-normed conv positions
                 dict(vocab_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                      conv_dim=[32, 32, 32], conv_stride=[5, 2, 2], conv_kernel=[10, 3, 3],
                      num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, classifier_proj_size=32,
                      mask_time_prob=0.0)),
    "whisper": ("WhisperForAudioClassification", "WhisperConfig",  # log-mel input, conv stem, sinusoids
                dict(vocab_size=100, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                     decoder_ffn_dim=128, max_source_positions=32, max_target_positions=32,
                     classifier_proj_size=32)),
}
MORE = [m for m in MODELS if m not in DEFAULT.split(",")]
IMAGE = {"vit", "convnext", "mobilevit", "deit", "beit", "swin", "segformer", "dinov2", "pvt_v2", "cvt",
         "mobilenet_v2", "efficientnet"}
AUDIO = {"wav2vec2": "input_values", "whisper": "input_features"}
TEXT = set(MODELS) - IMAGE - set(AUDIO)
# Models that classify the state of their <eos> token: every row holds one, at its last unmasked position.
EOS = {"bart": 2, "t5": 1}


def build(name):
    model_cls, config_cls, kwargs = MODELS[name]
    return getattr(T, model_cls)(getattr(T, config_cls)(num_labels=3, **kwargs))


# Runs in --ort-python: the fp16 conversion against the fp32 export, both in ONNX Runtime.
ORT_CHECK = """
import sys, numpy as np, onnx, onnxruntime as ort
d, names = sys.argv[1], sys.argv[2:]
def run(path):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for i, n in zip(s.get_inputs(), names):
        x = np.load(f"{d}/{n}.npy")
        feeds[i.name] = x.astype(np.float16) if i.type == "tensor(float16)" else x
    return s.run(None, feeds)[0].astype(np.float64)
a, b = run(f"{d}/m.onnx"), run(f"{d}/fp16.onnx")
casts = sum(n.op_type == "Cast" for n in onnx.load(f"{d}/fp16.onnx", load_external_data=False).graph.node)
print(np.linalg.norm(a - b) / np.linalg.norm(a), casts)
"""


class Logits(torch.nn.Module):
    def __init__(self, m, name):
        super().__init__()
        self.m, self.name = m, name

    def forward(self, *a):
        if self.name in TEXT:
            return self.m(input_ids=a[0], attention_mask=a[1]).logits
        if self.name in AUDIO:
            return self.m(**{AUDIO[self.name]: a[0]}).logits
        return self.m(pixel_values=a[0]).logits


def inputs(name):
    if name in TEXT:
        ids = torch.randint(3, 1000, (2, 16))
        mask = torch.ones(2, 16, dtype=torch.int64)
        mask[1, 12:] = 0
        if name in EOS:
            ids[0, 15], ids[1, 11] = EOS[name], EOS[name]
        return (ids, mask), ["ids", "mask"]
    if name == "wav2vec2":
        return (torch.randn(2, 1600),), ["x"]
    if name == "whisper":  # 16 mel bins x 2 * max_source_positions frames
        return (torch.randn(2, 16, 64),), ["x"]
    size = 32 if MODELS[name][2].get("image_size") == 32 else 64
    return (torch.randn(2, 3, size, size),), ["x"]


def run_cmd(amptrain, verb, path, names, args, d, extra=()):
    shutil.rmtree(f"{d}/out", ignore_errors=True)  # no file of an earlier run counts
    cmd = [amptrain, verb, path, *extra]
    for n, a in zip(names, args):
        np.save(f"{d}/{n}.npy", a.numpy())
        cmd += ["--input", f"{n}={d}/{n}.npy"]
    return subprocess.run(cmd, capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=DEFAULT, help="names, or 'more' / 'all'")
    ap.add_argument("--amptrain", default=os.path.join(ROOT, "build/tools/amptrain"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/hf"))
    ap.add_argument("--ort-python", default=os.path.join(ROOT, ".venv/bin/python"))
    a = ap.parse_args()
    rows, failed = [], 0
    sets = {"more": MORE, "all": list(MODELS)}
    for name in [n for m in a.models.split(",") for n in sets.get(m, [m])]:
        try:
            torch.manual_seed(0)
            try:
                m = build(name).eval()
            except Exception as e:  # noqa: BLE001 - a config this transformers version rejects is a result
                rows.append((name, f"model fails: {str(e).splitlines()[0][:80]}", "", ""))
                failed += 1
                continue
            with torch.no_grad():
                for p in m.parameters():
                    if p.abs().max() == 0:
                        p.normal_(0, 0.1)
            args, names = inputs(name)
            with torch.no_grad():
                want = Logits(copy.deepcopy(m).double(), name)(
                    *[x.double() if x.is_floating_point() else x for x in args]).numpy()
            cells = []
            for exporter in ("ts", "dynamo"):
                d = os.path.join(a.out, f"{name}.{exporter}")
                os.makedirs(d, exist_ok=True)
                try:
                    torch.onnx.export(Logits(m, name).eval(), args, f"{d}/m.onnx", dynamo=exporter == "dynamo",
                                      input_names=names,
                                      **({"opset_version": 17} if exporter == "ts" else {}))
                except Exception as e:  # noqa: BLE001 - the exporter's failure is a result
                    cells.append(f"export fails: {str(e).splitlines()[0][:80]}")
                    continue
                p = run_cmd(a.amptrain, "run", f"{d}/m.onnx", names, args, d, ["--output-dir", f"{d}/out"])
                if p.returncode:
                    cells.append("**fail** " + p.stderr.strip().splitlines()[-1][:150])
                    failed += 1
                    continue
                got = np.load(sorted(glob.glob(f"{d}/out/*.npy"))[0]).astype(np.float64)
                err = np.linalg.norm(got - want) / np.linalg.norm(want)
                ok = err < 1e-4
                failed += not ok
                cells.append(f"{'ok' if ok else '**fail**'} {err:.1e}")
                p = subprocess.run([a.amptrain, "convert", f"{d}/m.onnx", "-o", f"{d}/fp16.onnx", "--amp", "O2"],
                                   capture_output=True, text=True)
                if p.returncode:
                    cells[-1] += "; convert **fail** " + p.stderr.strip().splitlines()[-1][:100]
                    failed += 1
                    continue
                p = subprocess.run([a.ort_python, "-c", ORT_CHECK, d, *names], capture_output=True, text=True)
                if p.returncode:
                    cells[-1] += "; O2 fp16 in ORT **fail** " + (p.stderr.strip().splitlines() or ["?"])[-1][:100]
                    failed += 1
                    continue
                conv_err, casts = p.stdout.split()
                ok = float(conv_err) < 1e-2
                failed += not ok
                cells[-1] += f"; O2 fp16 in ORT {'ok' if ok else '**fail**'} {float(conv_err):.1e}, {casts} Casts"
            # Gradients for every model (BN at batch 2 over small planes is judged by the same yardstick).
            d = os.path.join(a.out, f"{name}.train")
            os.makedirs(d, exist_ok=True)
            mt = copy.deepcopy(m).train()
            for mod in mt.modules():
                if isinstance(mod, torch.nn.Dropout):
                    mod.p = 0.0
            for attr in ("attention_dropout", "attention_probs_dropout_prob", "attn_pdrop"):
                if hasattr(mt.config, attr):
                    setattr(mt.config, attr, 0.0)
            y = torch.tensor([0, 2])
            try:
                torch.onnx.export(Logits(mt, name), args, f"{d}/m.onnx", dynamo=True, optimize=False,
                                  input_names=names)
            except Exception as e:  # noqa: BLE001 - the exporter's failure is a result
                rows.append((name, *cells, f"export fails: {str(e).splitlines()[0][:80]}"))
                continue

            def grads(dtype):
                mm = copy.deepcopy(mt).to(dtype)
                loss = torch.nn.functional.cross_entropy(
                    Logits(mm, name)(*[x.to(dtype) if x.is_floating_point() else x for x in args]), y)
                loss.backward()
                return {k: p.grad.double().numpy() for k, p in mm.named_parameters() if p.grad is not None}

            g64, g32 = grads(torch.float64), grads(torch.float32)
            np.save(f"{d}/y.npy", y.numpy())
            p = run_cmd(a.amptrain, "grad", f"{d}/m.onnx", names, args, d,
                        ["--labels", f"{d}/y.npy", "--output-dir", f"{d}/out"])
            if p.returncode:
                grad_cell = "**fail** " + p.stderr.strip().splitlines()[-1][:150]
                failed += 1
            else:
                bad, worst, missing = 0, 0.0, []
                # Tied weights (BART's and T5's shared embeddings): PyTorch names the parameter once, the
                # export by any of its module paths.
                aliases = {}
                for k, prm in mt.named_parameters(remove_duplicate=False):
                    aliases.setdefault(id(prm), []).append(k)
                names_of = {ks[0]: ks for ks in aliases.values()}
                for k, ref in g64.items():
                    found = [f for f in (f"{d}/out/grads/m.{a}.npy" for a in names_of.get(k, [k])) if os.path.exists(f)]
                    if not found:
                        missing.append(k)
                        continue
                    f = found[0]
                    den = max(np.linalg.norm(ref), 1e-12)
                    e = np.linalg.norm(np.load(f).astype(np.float64) - ref) / den
                    bound = max(10 * np.linalg.norm(g32[k] - ref) / den, 1e-4)
                    worst = max(worst, e / bound)
                    bad += e > bound
                known = {a for ks in aliases.values() for a in ks}
                extra = sorted(os.path.basename(f)[2:-4] for f in glob.glob(f"{d}/out/grads/*.npy")
                               if os.path.basename(f)[2:-4] not in known)
                ok = bad == 0 and not missing
                failed += not ok
                grad_cell = (f"{'ok' if ok else '**fail**'} {len(g64)} params, {len(missing)} missing, {bad} over, "
                             f"worst {worst:.3f} of the bound" + (f"; extra: {', '.join(extra)}" if extra else ""))
            rows.append((name, *cells, grad_cell))
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)  # progress
        except Exception as e:  # noqa: BLE001 - one model's failure must not end the table
            rows.append((name, f"**fail** {type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}", "", ""))
            failed += 1

    print("| model | TorchScript: run (rel. L2 vs float64); O2 fp16 | dynamo: run; O2 fp16 | grad, dynamo optimize=False |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
