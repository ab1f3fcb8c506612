#!/usr/bin/env python3
"""amptrain's O2 fp16 conversion against onnxconverter-common, side by side.

Run with the pyenv python3 (onnx, onnxruntime, onnxconverter-common); the
models are exported with Debian's /usr/bin/python3 (torch):

  python3 tools/bench/amp_vs_onnxconverter.py --amptrain build/tools/amptrain \\
      --work /tmp/amp_vs_occ --out docs/benchmarks/amp_vs_onnxconverter.md

For SimpleCNN, ResNet-50 (64x64 input) and the small transformer (opset 17,
eval mode, models/torch/export_models.py) it converts the fp32 model with
  onnxconverter_common.float16.convert_float_to_float16(model, keep_io_types=True)
and with
  amptrain convert MODEL -o OUT --amp O2 --dtype fp16
and reports per model and converter: Cast nodes in the result (all graphs),
relative L2 error of the outputs against the fp32 model in ONNX Runtime (CPU
provider, the same seeded random inputs, batch 16) and in `amptrain run`
(ONNX Runtime's CPU provider computes fp16 ops by casting to fp32 and drops
cast pairs, so its error mostly measures weight rounding; amptrain's CPU
kernels round every fp16 result, as a GPU does), conversion time measured the same way for both (file in -> file out, load
and save included; median of --repeat runs), twice:
  in-process: onnxconverter-common: onnx.load + convert + onnx.save inside
    this (warm) interpreter; amptrain: the `total` that `amptrain convert
    --timings` prints (model file read to model file renamed into place,
    inside the process). Neither includes process start-up.
  process: a fresh process per conversion, start-up included: `python3 -c`
    (interpreter start, `import onnx, onnxconverter_common`, load, convert,
    save) against the whole `amptrain convert` process.
with wall and CPU (user+sys) seconds for each (CPU time is less disturbed by
other load on a small machine), plus initializer bytes and whether
onnx.checker.check_model(full_check=True) accepts the result.
The table goes to --out (Markdown) with the date, machine and command.
Hand-written analysis below the line
`<!-- notes -->` of an existing --out file is kept.
"""
import argparse
import datetime
import re
import resource
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxconverter_common import float16

MODELS = ["simplecnn", "resnet50", "transformer"]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def export_models(work):
    script = os.path.join(REPO, "models", "torch", "export_models.py")
    base = ["/usr/bin/python3", script, "--quiet", "--out", work, "--opsets", "17", "--modes", "eval"]
    subprocess.run(base + ["--models", "simplecnn,transformer"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(base + ["--models", "resnet50", "--image-size", "64"], check=True, stdout=subprocess.DEVNULL)


def random_feeds(path, seed=0, batch=16):
    model = onnx.load(path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    # Token ids span the whole embedding table (the row count of the Gather
    # that reads the input), so every converted embedding row is exercised.
    rows = {}
    dims = {i.name: list(i.dims) for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Gather" and len(n.input) > 1 and n.input[0] in dims:
            rows[n.input[1]] = dims[n.input[0]][0]
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else batch for d in tt.shape.dim]
        if np.issubdtype(dtype, np.floating):
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[vi.name] = rng.integers(0, rows.get(vi.name, 10), shape).astype(dtype)
    return feeds


def run_ort(path, feeds):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def run_amptrain(binary, path, feeds, work):
    os.makedirs(work, exist_ok=True)
    args = [binary, "run", path, "--output-dir", work]
    for name, value in feeds.items():
        np.save(os.path.join(work, name + ".npy"), value)
        args += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    first = onnx.load(path, load_external_data=False).graph.output[0].name
    return np.load(os.path.join(work, first + ".npy"))


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def count_casts(graph):
    n = 0
    for node in graph.node:
        n += node.op_type == "Cast"
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                n += count_casts(attr.g)
            n += sum(count_casts(g) for g in attr.graphs)
    return n


def initializer_bytes(model):
    return sum(len(t.raw_data) if t.HasField("raw_data") else
               np.prod(t.dims, dtype=np.int64) * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
               for t in model.graph.initializer)


def checker_ok(path):
    try:
        onnx.checker.check_model(path, full_check=True)
        return "yes"
    except Exception as e:  # ValidationError / InferenceError
        return "NO: " + str(e).splitlines()[0][:80]


OCC_SCRIPT = ("import sys, onnx; from onnxconverter_common import float16; "
              "onnx.save(float16.convert_float_to_float16(onnx.load(sys.argv[1]), keep_io_types=True), sys.argv[2])")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def occ_in_process(src, dst):
    """(wall, cpu) seconds of load + convert + save in this interpreter."""
    wall, cpu = time.perf_counter(), time.process_time()
    onnx.save(float16.convert_float_to_float16(onnx.load(src), keep_io_types=True), dst)
    return time.perf_counter() - wall, time.process_time() - cpu


def occ_process(src, dst):
    """(wall, cpu) seconds of a fresh python3 process doing the same."""
    wall, cpu = time.perf_counter(), children_cpu()
    subprocess.run([sys.executable, "-c", OCC_SCRIPT, src, dst], check=True)
    return time.perf_counter() - wall, children_cpu() - cpu


def amptrain_run_convert(binary, src, dst):
    """(process wall, process cpu, in-process total) seconds of one amptrain convert."""
    wall, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run([binary, "convert", src, "-o", dst, "--amp", "O2", "--dtype", "fp16", "--timings"],
                          check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - wall, children_cpu() - cpu
    total = re.search(r"total ([0-9.]+) ms", done.stderr)
    if not total:
        raise RuntimeError("amptrain convert --timings printed no total: " + done.stderr)
    return wall, cpu, float(total.group(1)) / 1000


def median_times(fn, repeat):
    """Per-position medians of the tuples `fn` returns over `repeat` calls."""
    runs = [fn() for _ in range(repeat)]
    return [statistics.median(r[i] for r in runs) for i in range(len(runs[0]))]


def occ_times(src, dst, repeat):
    in_wall, _ = median_times(lambda: occ_in_process(src, dst), repeat)
    proc_wall, proc_cpu = median_times(lambda: occ_process(src, dst), repeat)
    return {"in_process": in_wall, "process": proc_wall, "process_cpu": proc_cpu}


def amptrain_times(binary, src, dst, repeat):
    proc_wall, proc_cpu, in_process = median_times(lambda: amptrain_run_convert(binary, src, dst), repeat)
    return {"in_process": in_process, "process": proc_wall, "process_cpu": proc_cpu}


def measure(name, path, times, feeds, want, binary):
    model = onnx.load(path)
    row = {"converter": name, "casts": count_casts(model.graph), "bytes": initializer_bytes(model),
           "checker": checker_ok(path), **times}
    try:
        row["err"] = rel_l2(run_ort(path, feeds)[0], want)
    except Exception as e:  # ORT load/run failure is a result, not a crash
        row["err"] = None
        row["ort_error"] = str(e).splitlines()[0][:80]
    try:
        row["run_err"] = rel_l2(run_amptrain(binary, path, feeds, path + ".run"), want)
    except subprocess.CalledProcessError:
        row["run_err"] = None
    return row


def process_startup(binary):
    """Wall seconds of process start-up alone: `amptrain --version`, and python3 importing onnx and
    onnxconverter_common."""
    t = time.perf_counter()
    subprocess.run([binary, "--version"], check=True, stdout=subprocess.DEVNULL)
    amp = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import onnx; from onnxconverter_common import float16"], check=True)
    return amp, time.perf_counter() - t


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


NOTES_MARKER = "<!-- notes -->"


def kept_notes(path):
    if not path or not os.path.exists(path):
        return ""
    with open(path) as f:
        text = f.read()
    at = text.find(NOTES_MARKER)
    return "" if at < 0 else "\n" + text[at:]


def verdicts(occ, amp):
    missed = []
    if amp["casts"] > occ["casts"]:
        missed.append("more Casts")
    for key, where in (("err", "ORT"), ("run_err", "amptrain run")):
        if amp[key] is None or (occ[key] is not None and amp[key] > occ[key]):
            missed.append(f"less accurate ({where})")
    if amp["in_process"] > occ["in_process"]:
        missed.append("slower in-process")
    if amp["process"] > occ["process"]:
        missed.append("slower as a process")
    if amp["checker"] != "yes":
        missed.append("checker")
    return "all met" if not missed else "MISSED: " + ", ".join(missed)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--amptrain", required=True, help="the amptrain binary")
    p.add_argument("--work", default="/tmp/amp_vs_onnxconverter", help="folder for models and outputs")
    p.add_argument("--out", help="Markdown file to write (default: print only)")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--skip-export", action="store_true", help="reuse the models in --work")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if not args.skip_export:
        export_models(args.work)

    rows = []
    for m in MODELS:
        src = os.path.join(args.work, f"{m}_eval_op17.onnx")
        feeds = random_feeds(src)
        want = run_ort(src, feeds)[0]
        fp32_bytes = initializer_bytes(onnx.load(src))
        occ_path, amp_path = src.replace(".onnx", ".occ_fp16.onnx"), src.replace(".onnx", ".amptrain_O2_fp16.onnx")
        occ = measure("onnxconverter-common", occ_path, occ_times(src, occ_path, args.repeat), feeds, want,
                      args.amptrain)
        amp = measure("amptrain O2", amp_path, amptrain_times(args.amptrain, src, amp_path, args.repeat), feeds,
                      want, args.amptrain)
        for r in (occ, amp):
            r["model"], r["weights"] = m, r["bytes"] / fp32_bytes
        amp["verdict"] = verdicts(occ, amp)
        rows += [occ, amp]

    import onnxconverter_common
    startup = median_times(lambda: process_startup(args.amptrain), 7)
    cmd = "python3 " + " ".join([os.path.relpath(__file__, REPO)] + sys.argv[1:])
    lines = [
        "# amptrain O2 fp16 vs onnxconverter-common",
        "",
        f"Date: {datetime.date.today().isoformat()}  ",
        f"Machine: {machine()}  ",
        f"Versions: onnx {onnx.__version__}, onnxruntime {ort.__version__}, "
        f"onnxconverter-common {onnxconverter_common.__version__}  ",
        f"Command: `{cmd}`",
        "",
        "Models: PyTorch 1.13 exports (opset 17, eval mode) of SimpleCNN (1x28x28), ResNet-50 (3x64x64) and the",
        "small transformer encoder (16 tokens), from models/torch/export_models.py. Error: relative L2 of",
        "output_0 against the fp32 model, all run in ONNX Runtime's CPU provider on the same seeded random",
        "inputs (batch 16); the amptrain run column runs the converted model with amptrain's CPU kernels.",
        "",
        f"Time: median of {args.repeat} conversions, file in -> file out (load and save included), measured the",
        "same way for both converters, twice. **In-process** (no process start-up): onnxconverter-common =",
        "onnx.load + convert_float_to_float16(keep_io_types=True) + onnx.save in a warm interpreter; amptrain =",
        "the `total` printed by `amptrain convert --timings` (model read to output renamed into place).",
        "**Process** (start-up included): a fresh `python3 -c` doing the same (interpreter start and",
        "`import onnx, onnxconverter_common` included) against the whole `amptrain convert --amp O2 --dtype fp16`",
        "process; wall and CPU (user+sys) seconds. Neither side fsyncs its output (onnx.save writes in place;",
        "amptrain writes a temporary file and renames it). Start-up alone (median of 7): "
        f"`amptrain --version` {startup[0]:.3f} s, python3 + imports {startup[1]:.3f} s.",
        "Weights: initializer bytes / fp32 initializer bytes. Targets for amptrain: no more Casts, error no larger,",
        "faster (both ways).",
        "",
        "| model | converter | Casts | rel. L2 vs fp32 (ORT) | rel. L2 vs fp32 (amptrain run) | in-process (s) "
        "| process wall (s) | process CPU (s) | weights | checker | targets |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        err = f"{r['err']:.2e}" if r["err"] is not None else "ORT failed: " + r["ort_error"]
        run_err = f"{r['run_err']:.2e}" if r["run_err"] is not None else "amptrain run failed"
        lines.append(f"| {r['model']} | {r['converter']} | {r['casts']} | {err} | {run_err} | {r['in_process']:.3f} | "
                     f"{r['process']:.3f} | {r['process_cpu']:.3f} | "
                     f"{100 * r['weights']:.1f}% | {r['checker']} | {r.get('verdict', '')} |")
    text = "\n".join(lines) + "\n" + kept_notes(args.out)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
