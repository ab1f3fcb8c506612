"""Writes an image folder and what torchvision makes of it: the oracle of
tests/executor/image_folder_test.cc.

usage: image_folder_oracle.py DIR SIZE CHANNELS [RESIZE]

DIR/train/<class>/... and DIR/val/<class>/... get JPEGs (RGB, gray, large
enough for DCT scaling, upper-case extension) and PNGs (RGB, RGBA, gray,
palette, extreme aspect ratios); DIR/expected_{train,val}.npy hold uint8
[N, CHANNELS, SIZE, SIZE] and DIR/labels_{train,val}.npy the labels, in
torchvision ImageFolder's order, each image loaded as torchvision's
pil_loader does, converted to RGB or L, through Resize(SIZE) and
CenterCrop(SIZE). A JPEG at least twice the target size is first drafted
(PIL's draft: libjpeg's scaled IDCT), as amptrain decodes it.
"""
import os
import sys

import numpy as np
from PIL import Image
from torchvision import transforms
from torchvision.datasets import ImageFolder


def picture(h, w, seed, channels=3):
    """Smooth gradients, an edge and noise: something like a photo."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    planes = []
    for c in range(channels):
        v = 127 + 100 * np.sin(x / (5 + 3 * c) + seed) * np.cos(y / (7 + c))
        v += np.where(x > w // 3, 40, -40) + rng.normal(0, 12, (h, w))
        planes.append(v)
    a = np.clip(np.stack(planes, -1), 0, 255).astype(np.uint8)
    return a[..., 0] if channels == 1 else a


def main():
    root, size, channels = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    resize = int(sys.argv[4]) if len(sys.argv) > 4 else size
    files = {
        "train/ant/a_rgb.jpg": ("JPEG", Image.fromarray(picture(300, 200, 1))),
        "train/ant/sub/b_gray.jpg": ("JPEG", Image.fromarray(picture(50, 70, 2, 1))),
        "train/ant/c_big.JPEG": ("JPEG", Image.fromarray(picture(700, 900, 3))),
        "train/bee/d_rgba.png": ("PNG", Image.fromarray(np.dstack([picture(40, 33, 4), picture(40, 33, 5, 1)]))),
        "train/bee/e_palette.png": ("PNG", Image.fromarray(picture(29, 64, 6)).quantize(37)),
        "train/bee/f_wide.png": ("PNG", Image.fromarray(picture(20, 500, 7))),
        "train/bee/g_gray.png": ("PNG", Image.fromarray(picture(size, size, 8, 1))),
        "train/cat/h_exact.png": ("PNG", Image.fromarray(picture(size, size + 9, 9))),
        "val/ant/i.jpg": ("JPEG", Image.fromarray(picture(64, 48, 10))),
        "val/cat/j.png": ("PNG", Image.fromarray(picture(17, 19, 11))),
    }
    for rel, (fmt, im) in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        im.save(path, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    mode = "RGB" if channels == 3 else "L"

    def load(path):
        with open(path, "rb") as f:
            im = Image.open(f)
            if im.format == "JPEG":
                im.draft(im.mode, (2 * resize, 2 * resize))
            return im.convert(mode)

    tf = transforms.Compose([transforms.Resize(resize), transforms.CenterCrop(size)])
    classes = None
    for split in ("train", "val"):
        ds = ImageFolder(os.path.join(root, split), loader=load, transform=tf)
        if classes is None:
            classes = ds.classes
        index = {c: i for i, c in enumerate(classes)}
        images, labels = [], []
        for (path, label), (im, _) in zip(ds.samples, ds):
            a = np.asarray(im, dtype=np.uint8)
            images.append(a.transpose(2, 0, 1) if a.ndim == 3 else a[None])
            labels.append(index[ds.classes[label]])
        np.save(os.path.join(root, f"expected_{split}.npy"), np.stack(images))
        np.save(os.path.join(root, f"labels_{split}.npy"), np.array(labels, dtype=np.int64))


if __name__ == "__main__":
    main()
