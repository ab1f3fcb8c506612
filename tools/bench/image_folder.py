"""Image folders (`--data images:DIR`) on real data, against the IDX files and torchvision.

    .venv/bin/python tools/bench/image_folder.py [--amptrain build/tools/amptrain] [--work build/image_folder]
                                                 [--epochs 2] [--threads 2] [--out docs/image_folders_run.md]

1. Writes Fashion-MNIST (Debian's dataset-fashion-mnist) as two image folders with PIL:
   `png/` (the 28x28 gray images as PNGs, lossless) and `jpeg/` (each image upscaled to 56x56 RGB
   with PIL's bicubic filter and saved as a quality-90 JPEG), in train/<class>/ and val/<class>/.
2. Loading: amptrain's decode of each folder (at 1x28x28, and at 3x32x32 for the JPEGs) against
   torchvision's ImageFolder with the same Resize + CenterCrop, read through once by a DataLoader
   with as many workers as --threads. Wall seconds of each, the faster of two runs (a warm page
   cache); amptrain's include its import of the model and one training step (0.4 s on the IDX files).
3. Training: SimpleCNN, --epochs epochs of Adam 1e-3, batch 128, AMP O2 (bf16 where native, else fp16),
   on `fashion-mnist` (the IDX files), `images:png/` and `images:jpeg/` (a 3x32x32 SimpleCNN): the
   test accuracy of each. The PNG folder holds the IDX files' pixels exactly, so its accuracy differs
   from the IDX run only by the sample order (class folders, not file order) and the normalization
   (ImageNet's gray statistics, not Fashion-MNIST's).
"""
import os
import re
import time

from PIL import Image

from fmnist_bench import CLASSES, SPLITS, amptrain_cpu, arguments, run, split_arrays





def write_folders(work):
    done = os.path.join(work, "written")
    if os.path.exists(done):
        return
    for split, prefix in SPLITS:
        split = "val" if split == "test" else split  # torchvision's folder name
        images, labels = split_arrays(prefix)
        for kind in ("png", "jpeg"):
            for c in CLASSES:
                os.makedirs(os.path.join(work, kind, split, c), exist_ok=True)
        for i, (im, y) in enumerate(zip(images, labels)):
            name = f"{i:05d}"
            Image.fromarray(im).save(os.path.join(work, "png", split, CLASSES[y], name + ".png"))
            rgb = Image.fromarray(im).resize((56, 56), Image.BICUBIC).convert("RGB")
            rgb.save(os.path.join(work, "jpeg", split, CLASSES[y], name + ".jpg"), quality=90)
    open(done, "w").close()


def torchvision_load_seconds(folder, size, channels, workers):
    import torch
    from torchvision import datasets, transforms
    mode = "RGB" if channels == 3 else "L"

    def loader(path):
        with open(path, "rb") as f:
            return Image.open(f).convert(mode)

    tf = transforms.Compose([transforms.Resize(size), transforms.CenterCrop(size), transforms.PILToTensor()])
    start = time.perf_counter()
    n = 0
    for split in ("train", "val"):
        ds = datasets.ImageFolder(os.path.join(folder, split), loader=loader, transform=tf)
        dl = torch.utils.data.DataLoader(ds, batch_size=256, num_workers=workers)
        for x, _ in dl:
            n += x.shape[0]
    return time.perf_counter() - start, n




def main():
    a = arguments("build/image_folder", "docs/image_folders_run.md")
    t0 = time.perf_counter()
    write_folders(a.work)
    print(f"folders written ({time.perf_counter() - t0:.0f} s)", flush=True)
    amp = a.amptrain
    env_threads = ["--threads", str(a.threads)]
    cpu, dtype = amptrain_cpu(amp)
    models = {}
    for name, args in (("gray28", ["--in-channels", "1", "--image-size", "28"]),
                       ("rgb32", ["--in-channels", "3", "--image-size", "32"])):
        path = os.path.join(a.work, name + ".onnx")
        run([amp, "models", "write", "simplecnn", *args, "-o", path])
        models[name] = path

    rows = []
    # Loading alone: amptrain's eval decodes the test split; train decodes both, so time a
    # 1-step train (its step is milliseconds) to cover all 70000 images.
    for label, folder, model, size, channels in (("PNG 28x28 gray -> 1x28x28", "png", "gray28", 28, 1),
                                                 ("JPEG 56x56 RGB -> 3x32x32", "jpeg", "rgb32", 32, 3)):
        cmd = [amp, "train", models[model], "--data", f"images:{os.path.join(a.work, folder)}",
               "--steps", "1", "--batch-size", "128", *env_threads]
        # Each twice, the faster run counts: both read from a warm page cache.
        wall = min(run(cmd)[1] for _ in range(2))
        tv, n = min(torchvision_load_seconds(os.path.join(a.work, folder), size, channels, a.threads)
                    for _ in range(2))
        rows.append((label, wall, tv, n))
        print(rows[-1], flush=True)

    results = []
    for label, data, model in (("fashion-mnist (IDX files)", "fashion-mnist", "gray28"),
                               ("images:png/ (1x28x28)", f"images:{os.path.join(a.work, 'png')}", "gray28"),
                               ("images:jpeg/ (3x32x32)", f"images:{os.path.join(a.work, 'jpeg')}", "rgb32")):
        out, wall = run([amp, "train", models[model], "--data", data, "--epochs", str(a.epochs), "--batch-size", "128",
                         "--amp", "O2", "--dtype", dtype, "--seed", "1", *env_threads])
        acc = re.findall(r"test loss [0-9.]+ acc(?:uracy)? ([0-9.]+)%", out)
        results.append((label, acc[-1] if acc else "?", wall))
        print(results[-1], flush=True)

    lines = [f"# Image folders on Fashion-MNIST ({time.strftime('%Y-%m-%d')})", "",
             f"`tools/bench/image_folder.py --epochs {a.epochs} --threads {a.threads}`; CPU: {cpu}; "
             f"{os.cpu_count()} cores; AMP O2 {dtype}.", "",
             "## Loading all 70000 images", "",
             "| folder | amptrain (decode + resize, and a 1-step train) s | torchvision ImageFolder + DataLoader "
             f"({a.threads} workers) s | images |",
             "|---|---|---|---|"]
    lines += [f"| {l} | {w:.1f} | {t:.1f} | {n} |" for l, w, t, n in rows]
    lines += ["", f"## SimpleCNN, {a.epochs} epochs, test accuracy", "",
              "| data | test accuracy % | wall s |", "|---|---|---|"]
    lines += [f"| {l} | {acc} | {w:.0f} |" for l, acc, w in results]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
