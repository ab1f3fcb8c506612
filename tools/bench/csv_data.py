"""CSV data sets (`--data csv:...`) on real data: Fashion-MNIST as a table.

    .venv/bin/python tools/bench/csv_data.py [--amptrain build/tools/amptrain] [--work build/csv_data]
                                             [--epochs 2] [--threads 2] [--out docs/csv_data_run.md]

1. Writes Fashion-MNIST (Debian's dataset-fashion-mnist) as train.csv (60000 rows) and test.csv
   (10000 rows): a header, 784 pixel columns scaled to [0, 1] with 4 decimals, and the class
   name as text in the last column.
2. Loading: amptrain parsing both files (a 1-step `train`, the faster of two runs) against
   numpy.loadtxt of the same files (features and labels), the faster of two.
3. Training: an MLP 784-256-10 (ONNX written with onnx.helper, Kaiming-uniform weights, seed 0),
   --epochs epochs of Adam 1e-3, batch 128, AMP O2 (bf16 where native, else fp16), and fp32: the test
   accuracy of each. numpy's loader on the same text is the oracle for the parsed values: the run
   stops if amptrain's first-epoch accuracy is not that of a model that learns (> 80%).
"""
import os
import re
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fmnist_bench import CLASSES, SPLITS, amptrain_cpu, arguments, run, split_arrays





def write_tables(work):
    for name, prefix in SPLITS:
        path = os.path.join(work, name + ".csv")
        if os.path.exists(path):
            continue
        images, y = split_arrays(prefix)
        x = images.reshape(-1, 784) / 255.0
        with open(path + ".part", "w") as f:
            f.write(",".join(f"p{i}" for i in range(784)) + ",class\n")
            for row, label in zip(x, y):
                f.write(",".join(f"{v:.4g}" for v in row) + "," + CLASSES[label] + "\n")
        os.replace(path + ".part", path)


def write_mlp(path):
    rng = np.random.default_rng(0)

    def kaiming(fan_out, fan_in):
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32), \
            rng.uniform(-bound, bound, fan_out).astype(np.float32)

    w1, b1 = kaiming(256, 784)
    w2, b2 = kaiming(10, 256)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "fc1.weight"), (b1, "fc1.bias"),
                                                        (w2, "fc2.weight"), (b2, "fc2.bias"))]
    nodes = [helper.make_node("Gemm", ["features", "fc1.weight", "fc1.bias"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["logits"], transB=1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", 784])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)




def main():
    a = arguments("build/csv_data", "docs/csv_data_run.md")
    t0 = time.perf_counter()
    write_tables(a.work)
    print(f"tables written ({time.perf_counter() - t0:.0f} s)", flush=True)
    mlp = os.path.join(a.work, "mlp.onnx")
    write_mlp(mlp)
    amp = a.amptrain
    cpu, dtype = amptrain_cpu(amp)
    train, test = os.path.join(a.work, "train.csv"), os.path.join(a.work, "test.csv")
    data = f"csv:{train},{test}"
    threads = ["--threads", str(a.threads)]
    ours = min(run([amp, "train", mlp, "--data", data, "--steps", "1", *threads])[1] for _ in range(2))

    def numpy_load():
        start = time.perf_counter()
        for f in (train, test):
            np.loadtxt(f, delimiter=",", skiprows=1, usecols=range(784), dtype=np.float32)
            np.loadtxt(f, delimiter=",", skiprows=1, usecols=[784], dtype=str)
        return time.perf_counter() - start
    theirs = min(numpy_load() for _ in range(2))
    print(f"load: amptrain {ours:.1f} s, numpy.loadtxt {theirs:.1f} s", flush=True)

    results = []
    for label, flags in (("fp32", []), (f"AMP O2 {dtype}", ["--amp", "O2", "--dtype", dtype])):
        out, wall = run([amp, "train", mlp, "--data", data, "--epochs", str(a.epochs), "--batch-size", "128",
                         "--seed", "1", *flags, *threads])
        accs = re.findall(r"test loss [0-9.]+ accuracy ([0-9.]+)%", out)
        if not accs or float(accs[0]) < 80:
            sys.exit(f"{label}: the MLP did not learn ({accs})\n{out}")
        results.append((label, accs[-1], wall))
        print(results[-1], flush=True)

    size = sum(os.path.getsize(f) for f in (train, test)) / (1 << 20)
    lines = [f"# CSV data on Fashion-MNIST ({time.strftime('%Y-%m-%d')})", "",
             f"`tools/bench/csv_data.py --epochs {a.epochs} --threads {a.threads}`; CPU: {cpu}; {os.cpu_count()} cores. "
             f"train.csv + test.csv: 70000 rows, 784 features and a text class, {size:.0f} MiB.", "",
             "| loading both files | s |", "|---|---|",
             f"| amptrain (parse, and a 1-step train) | {ours:.1f} |",
             f"| numpy.loadtxt (features, then the class column) | {theirs:.1f} |", "",
             f"MLP 784-256-10, {a.epochs} epochs, Adam 1e-3, batch 128:", "",
             "| precision | test accuracy % | wall s |", "|---|---|---|"]
    lines += [f"| {l} | {acc} | {w:.0f} |" for l, acc, w in results]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
