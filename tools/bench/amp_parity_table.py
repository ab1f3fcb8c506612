#!/usr/bin/env python3
"""The accuracy-parity table of tools/bench/amp_parity.sh's runs, as Markdown on stdout.

  python3 tools/bench/amp_parity_table.py [RUN_DIR]   (default /var/tmp/amptrain-parity)

Per configuration: the final test accuracy of each seed, their mean and its difference from O0's mean
(over the seeds both have), the skipped steps and the final loss scale. Unfinished runs are listed as such.
"""
import glob
import json
import os
import statistics
import sys

ORDER = ["O0", "O1-bf16", "O2-fp16", "O1-fp16", "O2-bf16", "O3-bf16", "O3-fp16"]


def load(run_dir):
    runs = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "*.jsonl"))):
        name = os.path.basename(path)[:-len(".jsonl")]
        if name.endswith(".partial"):
            continue
        config, seed = name.rsplit("-s", 1)
        events = [json.loads(line) for line in open(path) if line.strip()]
        epochs = [e for e in events if e.get("event") == "epoch"]
        progress = [e for e in events if e.get("event") == "progress"]
        run = next((e for e in events if e.get("event") == "run"), {})
        if not epochs or "test_accuracy" not in epochs[-1]:
            continue
        runs.setdefault(config, {})[int(seed)] = {
            "accuracy": 100 * epochs[-1]["test_accuracy"], "epochs": epochs[-1]["epoch"],
            "skipped": progress[-1].get("skipped_steps", 0) if progress else 0,
            "scale": progress[-1].get("loss_scale") if progress else None, "wall_s": run.get("wall_s")}
    return runs


def main():
    run_dir = sys.argv[1] if len(sys.argv) > 1 else "/var/tmp/amptrain-parity"
    runs = load(run_dir)
    base = runs.get("O0", {})
    print("| precision | seeds | test accuracy per seed (%) | mean (%) | vs O0 mean (same seeds) | "
          "skipped steps | final loss scale | wall per run |")
    print("|---|---|---|---|---|---|---|---|")
    for config in ORDER + sorted(set(runs) - set(ORDER)):
        if config not in runs:
            print(f"| {config} | 0 | not run yet | | | | | |")
            continue
        r = runs[config]
        seeds = sorted(r)
        accs = [r[s]["accuracy"] for s in seeds]
        mean = statistics.mean(accs)
        common = [s for s in seeds if s in base]
        delta = ""
        if config != "O0" and common:
            d = statistics.mean(r[s]["accuracy"] for s in common) - statistics.mean(base[s]["accuracy"] for s in common)
            delta = f"{d:+.2f} pp"
        per_seed = ", ".join(f"s{s}: {r[s]['accuracy']:.2f}" for s in seeds)
        skipped = ", ".join(str(r[s]["skipped"]) for s in seeds)
        scales = ", ".join("-" if r[s]["scale"] in (None, 0) else f"{r[s]['scale']:g}" for s in seeds)
        walls = ", ".join(f"{r[s]['wall_s'] / 60:.0f} min" for s in seeds if r[s]["wall_s"])
        print(f"| {config} | {len(seeds)} | {per_seed} | {mean:.2f} | {delta} | {skipped} | {scales} | {walls} |")


if __name__ == "__main__":
    main()
