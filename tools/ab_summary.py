"""Summarise an A/B device run (tools/device_env.sh's ab_bench): per family, dtype and shape, each
round's forward and backward time of both builds and the median change.

    python3 tools/ab_summary.py LOG_DIR      # reads LOG_DIR/ab_{base,new}_{round}[_TAG].json
"""
import glob
import json
import os
import re
import statistics
import sys


def load(log_dir):
    """{(build, round): {(family, dtype, m, n): (fwd_s, bwd_s, bwd_pct)}} from every ab_*.json."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "ab_*.json"))):
        match = re.match(r"ab_(base|new)_(\d+)(?:_[a-z0-9]+)?\.json$", os.path.basename(path))
        if not match:
            continue
        with open(path) as f:
            results = json.load(f)["results"]
        table = runs.setdefault((match[1], int(match[2])), {})
        for r in results:
            if r.get("impl", "normkit") != "normkit" or "error" in r:
                continue
            key = (r["family"], r["dtype"].replace("torch.", ""), r["m"], r["n"])
            table[key] = (r["fwd_s"], r["bwd_s"], r.get("bwd_pct"), r.get("fwd_pct"))
    return runs


def main(log_dir):
    runs = load(log_dir)
    rounds = sorted({rnd for _, rnd in runs})
    keys = sorted({k for table in runs.values() for k in table})
    print(f"{'family':<11}{'dtype':<9}{'shape':<12}{'pass':<4} {'base µs (rounds)':<24}{'new µs (rounds)':<24}"
          f"{'median Δ':>9}")
    for key in keys:
        for i, name in ((0, "fwd"), (1, "bwd")):
            cols = []
            for build in ("base", "new"):
                cols.append([runs[(build, rnd)][key][i] * 1e6 for rnd in rounds
                             if key in runs.get((build, rnd), {}) and runs[(build, rnd)][key][i]])
            if not cols[0] or not cols[1]:
                continue
            delta = statistics.median(cols[1]) - statistics.median(cols[0])
            fmt = lambda xs: " ".join(f"{x:6.1f}" for x in xs)
            print(f"{key[0]:<11}{key[1]:<9}{f'{key[2]}x{key[3]}':<12}{name:<4} {fmt(cols[0]):<24}"
                  f"{fmt(cols[1]):<24}{delta:+9.1f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
