#!/usr/bin/env python3
"""Compare .npy arrays (or directories of them) numerically.

  compare_npy.py A.npy B.npy [--rel-l2 1e-4] [--max-abs 1e-6]
  compare_npy.py DIR_A DIR_B [--rel-l2 1e-4] [--max-abs 1e-6]

Prints, per array, the relative L2 error ||a-b|| / max(||b||, tiny) and the max abs
diff. Exit 0 if every array is within all given tolerances (default: --rel-l2 1e-4),
1 otherwise (also on shape mismatch, NaN mismatch or a file missing in B).
Directory mode compares every *.npy in DIR_A with the same name in DIR_B.
"""
import argparse
import os
import sys

import numpy as np


def compare(a_path, b_path, rel_tol, abs_tol):
    label = os.path.basename(a_path)
    if not os.path.exists(b_path):
        print(f"{label}: FAIL missing {b_path}")
        return False
    a, b = np.load(a_path), np.load(b_path)
    if a.shape != b.shape:
        print(f"{label}: FAIL shape {a.shape} vs {b.shape}")
        return False
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if not np.array_equal(np.isnan(a64), np.isnan(b64)):
        print(f"{label}: FAIL NaN positions differ")
        return False
    a64, b64 = np.nan_to_num(a64), np.nan_to_num(b64)
    diff = a64 - b64
    rel = np.linalg.norm(diff) / max(np.linalg.norm(b64), 1e-30)
    mx = float(np.abs(diff).max()) if diff.size else 0.0
    ok = (rel_tol is None or rel <= rel_tol) and (abs_tol is None or mx <= abs_tol)
    print(f"{label}: {'OK' if ok else 'FAIL'} rel_l2={rel:.3e} max_abs={mx:.3e} shape={a.shape} "
          f"dtype={a.dtype}/{b.dtype}")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rel-l2", type=float, default=None)
    p.add_argument("--max-abs", type=float, default=None)
    args = p.parse_args()
    if args.rel_l2 is None and args.max_abs is None:
        args.rel_l2 = 1e-4
    if os.path.isdir(args.a):
        names = sorted(f for f in os.listdir(args.a) if f.endswith(".npy"))
        if not names:
            print(f"no .npy files in {args.a}")
            return 1
        pairs = [(os.path.join(args.a, n), os.path.join(args.b, n)) for n in names]
    else:
        pairs = [(args.a, args.b)]
    results = [compare(a, b, args.rel_l2, args.max_abs) for a, b in pairs]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
