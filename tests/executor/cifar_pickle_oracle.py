"""Writes CIFAR batches in the python version's layout for tests/executor/data_test.cc.

    cifar_pickle_oracle.py DIR KIND FORMAT

KIND: cifar10 (DIR/cifar-10-batches-py/data_batch_1..5, test_batch; key b'labels')
      or cifar100 (DIR/cifar-100-python/train, test; keys b'fine_labels', b'coarse_labels').
FORMAT: py2  the opcodes of the files as distributed (Python 2 cPickle, protocol 2: byte strings
             as SHORT_BINSTRING/BINSTRING, the array by numpy.core.multiarray._reconstruct
             then BUILD), written here opcode by opcode;
        2, 4, 5  Python 3's pickle.dump of the same dict at that protocol (bytes through
             _codecs.encode at 2; numpy's own reduction of the array).
Each batch holds 2 or 3 images of random bytes and random labels. Python's unpickler is the
oracle: every file is read back with pickle.load(encoding='bytes') and must give the dict that
was meant; the expected samples and labels of each split go to DIR/expected_{train,test}_{x,y}.npy.
"""
import os
import pickle
import struct
import sys

import numpy as np


def py2_pickle(d, keys):
    """The dict as Python 2's cPickle.dump(d, f, 2) writes it (BINPUT memo marks included)."""
    out = bytearray(b"\x80\x02}q\x01(")
    memo = [1]

    def put():
        memo[0] += 1
        out.extend(b"q" + bytes([memo[0]]))

    def string(s):
        out.extend((b"U" + bytes([len(s)])) if len(s) < 256 else (b"T" + struct.pack("<I", len(s))))
        out.extend(s)
        put()

    def integer(v):
        out.extend(b"K" + bytes([v]) if v < 256 else b"M" + struct.pack("<H", v))

    for k in keys:
        string(k)
        v = d[k]
        if isinstance(v, np.ndarray):
            out.extend(b"cnumpy.core.multiarray\n_reconstruct\n")
            put()
            out.extend(b"cnumpy\nndarray\n")
            put()
            out.extend(b"K\x00\x85U\x01b\x87R")
            put()
            out.extend(b"(K\x01")
            for n in v.shape:
                integer(n)
            out.extend(b"\x86cnumpy\ndtype\n")
            put()
            out.extend(b"U\x02u1K\x00K\x01\x87R")
            put()
            out.extend(b"(K\x03U\x01|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89")
            raw = v.tobytes()
            out.extend(b"T" + struct.pack("<I", len(raw)) + raw)
            out.extend(b"tb")
        elif isinstance(v, list):
            out.extend(b"]")
            put()
            for i in range(0, len(v), 1000):  # cPickle appends in batches of 1000
                out.extend(b"(")
                for x in v[i:i + 1000]:
                    if isinstance(x, bytes):
                        string(x)
                    else:
                        integer(x)
                out.extend(b"e")
        else:
            string(v)
    out.extend(b"u.")
    return bytes(out)


def same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and (a == b).all()
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def main():
    root, kind, fmt = sys.argv[1], sys.argv[2], sys.argv[3]
    rng = np.random.default_rng(7)
    c100 = kind == "cifar100"
    folder = os.path.join(root, "cifar-100-python" if c100 else "cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)
    files = {"train": ["train"] if c100 else [f"data_batch_{i}" for i in range(1, 6)],
             "test": ["test"] if c100 else ["test_batch"]}
    for split, names in files.items():
        xs, ys = [], []
        for b, name in enumerate(names):
            n = 2 + (b % 2)
            data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
            labels = [int(v) for v in rng.integers(0, 100 if c100 else 10, n)]
            d = {b"batch_label": f"{split} batch {b}".encode(), b"data": data,
                 b"filenames": [f"img_{b}_{i}.png".encode() for i in range(n)]}
            keys = [b"data"]
            if c100:
                d[b"fine_labels"] = labels
                d[b"coarse_labels"] = [v // 5 for v in labels]
                keys += [b"fine_labels", b"coarse_labels"]
            else:
                d[b"labels"] = labels
                keys += [b"labels"]
            keys += [b"batch_label", b"filenames"]
            blob = py2_pickle(d, keys) if fmt == "py2" else pickle.dumps(d, protocol=int(fmt))
            back = pickle.loads(blob, encoding="bytes")
            assert same(back, d), f"{name}: Python reads back something else"
            with open(os.path.join(folder, name), "wb") as f:
                f.write(blob)
            xs.append(data.reshape(n, 3, 32, 32))
            ys += labels
        np.save(os.path.join(root, f"expected_{split}_x.npy"), np.concatenate(xs))
        np.save(os.path.join(root, f"expected_{split}_y.npy"), np.array(ys, dtype=np.int64))


if __name__ == "__main__":
    main()
