"""What the report and the benchmark show: progress bar, text and markdown tables, plot, numbers.

Pure functions of the result rows (dicts, see `normkit.bench.cli`) apart from the progress bar.
Rows of several families (their "family" key; RMSNorm when absent) get a section each.
"""

import csv
import json
import math
import sys
from collections import defaultdict
from typing import Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from .timing import PASS_TENSORS

DTYPE_NAMES = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32",
               "torch.float64": "fp64"}
FAMILY_TITLES = {"rms": "RMSNorm", "fused_add": "Fused residual add + RMSNorm (prenorm)",
                 "layer_norm": "LayerNorm (weight and bias)",
                 "fused_layer_norm": "Fused residual add + LayerNorm (prenorm, weight and bias)",
                 "gated": "Gated RMSNorm (Qwen3-Next: (weight · x̂) · silu(gate))"}


def progress(items: Iterable, desc: str):
    """tqdm on stderr when it is installed, else a plain `desc i/n` counter on stderr."""
    items = list(items)
    try:
        from tqdm import tqdm
    except ImportError:
        return _counter(items, desc)
    return tqdm(items, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True)


def _counter(items: List, desc: str):
    for i, item in enumerate(items):
        print(f"\r{desc} {i + 1}/{len(items)}", end="", file=sys.stderr, flush=True)
        yield item
    print(file=sys.stderr)


# ----------------------------------------------------------------------------- numbers
def fmt_us(seconds: Optional[float]) -> str:
    """Microseconds, 3 significant digits (whole µs from 1000 on); '—' when missing."""
    if seconds is None:
        return "—"
    us = seconds * 1e6
    return f"{us:.3g}" if us < 1000 else f"{us:.0f}"


def fmt_spread(row: Dict, key: str) -> str:
    """A pass's median µs with its p20–p80 range, e.g. '12.3 (12.1–12.6)'; '—' when not timed."""
    median = row.get(f"{key}_s")
    if median is None:
        return "—"
    p20, p80 = row.get(f"{key}_p20_s"), row.get(f"{key}_p80_s")
    if p20 is None or p80 is None:
        return fmt_us(median)
    return f"{fmt_us(median)} ({fmt_us(p20)}–{fmt_us(p80)})"


def fmt_pct(pct: Optional[float]) -> str:
    return "—" if pct is None else f"{pct:.0f} %"


def fmt_err(err: Optional[float]) -> str:
    return "—" if err is None else f"{err:.1e}"


def shape_label(row: Dict) -> str:
    dtype = DTYPE_NAMES.get(str(row["dtype"]), str(row["dtype"]))
    return f"{dtype} {row['m']}×{row['n']}"


def by_family(results: Sequence[Dict]) -> Dict[str, List[Dict]]:
    """The rows of each family, families in their order of appearance."""
    families: Dict[str, List[Dict]] = defaultdict(list)
    for r in results:
        families[r.get("family", "rms")].append(r)
    return dict(families)


# ----------------------------------------------------------------------------- tables
def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the first column left-aligned, the rest right."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells):
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


BENCH_HEADERS = ("dtype M×N", "impl", "fwd µs (p20–p80)", "fwd copy", "bwd µs (p20–p80)", "bwd copy",
                 "eager fwd µs", "eager fwd+bwd µs", "max err")
BENCH_LEGEND = ("fwd/bwd: GPU µs per call, median of CUDA-graph replays (p20–p80); copy: minimum bytes / "
                "time / copy bandwidth;\neager: wall µs per call, host included; max err: relative error "
                "vs float64, ‖got − ref‖ / ‖ref‖")


def bench_rows(results: Sequence[Dict]) -> List[List[str]]:
    """One text row per (shape, implementation); '†' marks a do_bench fallback time."""
    rows = []
    for r in results:
        if r.get("error"):
            rows.append([shape_label(r), r["impl"], "fails: " + r["error"][:60], *[""] * 6])
            continue
        mark = {k: "†" if r.get(f"{k}_method") == "do_bench" else "" for k in ("fwd", "bwd")}
        errors = [v for k, v in r.items() if k.startswith("err_") and v is not None]
        rows.append([shape_label(r), r["impl"], fmt_spread(r, "fwd") + mark["fwd"],
                     fmt_pct(r.get("fwd_pct")), fmt_spread(r, "bwd") + mark["bwd"],
                     fmt_pct(r.get("bwd_pct")), fmt_us(r.get("wall_fwd_s")),
                     fmt_us(r.get("wall_fwd_bwd_s")), fmt_err(max(errors) if errors else None)])
    return rows


def bench_tables(results: Sequence[Dict]) -> str:
    """The text table of each family, under its title."""
    return "\n\n".join(f"{FAMILY_TITLES[family]}\n"
                        + text_table(BENCH_HEADERS, bench_rows(rows))
                        for family, rows in by_family(results).items())


# ----------------------------------------------------------------------------- eager (bench --eager)
# the row keys of `normkit.bench.eager` (f"{key}_min_s", f"{key}_s" the median, ...) and their names
EAGER_PASSES = (("eager_fwd_no_grad", "fwd (no grad)"), ("eager_fwd", "fwd"), ("eager_fwd_bwd", "fwd + bwd"))


def eager_summary(results: Sequence[Dict], ours: str = "normkit", baseline: str = "native"
                  ) -> Tuple[List[str], List[List[str]]]:
    """(headers, rows) of one family's eager rows: the minimum µs of every implementation per shape
    and pass, ours ÷ the baseline, and the slowest implementation."""
    impls = list(dict.fromkeys(r["impl"] for r in results))
    rows = []
    for label, by_impl in _by_shape(results).items():
        for key, name in EAGER_PASSES:
            mins = {impl: r[f"{key}_min_s"] for impl, r in by_impl.items() if r.get(f"{key}_min_s")}
            cells = ["fails" if by_impl.get(i, {}).get("error") else fmt_us(mins.get(i)) for i in impls]
            ratio = (f"{mins[ours] / mins[baseline]:.2f}×" if ours in mins and baseline in mins
                     and ours != baseline else "—")
            slowest = max(mins, key=mins.get) if len(mins) > 1 else "—"
            rows.append([label, name, *cells, ratio, slowest])
    return ["dtype M×N", "pass", *impls, f"{ours} ÷ {baseline}", "slowest"], rows


def eager_rows(results: Sequence[Dict]) -> List[List[str]]:
    """One text row per (shape, implementation): each pass's median µs (p20–p80)."""
    rows = []
    for r in results:
        if r.get("error"):
            rows.append([shape_label(r), r["impl"], "fails: " + r["error"][:60], "", ""])
        else:
            rows.append([shape_label(r), r["impl"], *(fmt_spread(r, key) for key, _ in EAGER_PASSES)])
    return rows


EAGER_HEADERS = ("dtype M×N", "impl", *(f"{name} µs, median (p20–p80)" for _, name in EAGER_PASSES))


def eager_tables(results: Sequence[Dict]) -> str:
    """Per family: the minimum per shape and pass across implementations, then every median and spread."""
    sections = []
    for family, rows in by_family(results).items():
        headers, summary = eager_summary(rows)
        sections.append(f"{FAMILY_TITLES[family]}: minimum µs per call\n{text_table(headers, summary)}\n\n"
                        f"{FAMILY_TITLES[family]}: median µs per call (p20–p80)\n"
                        f"{text_table(EAGER_HEADERS, eager_rows(rows))}")
    return "\n\n".join(sections)


def eager_markdown(results: Sequence[Dict], environment: Dict) -> str:
    """The minimum tables as markdown, per family, under the device and versions."""
    env = environment
    lines = [f"Device: {env.get('device', '?')} · torch {env.get('torch', '?')} · triton {env.get('triton', '?')}"
             + "".join(f" · {k} {v}" for k, v in env.get("peers", {}).items())]
    if env.get("dry_run"):
        lines.append("\n**Dry run: the interpreter on a tiny shape, not a GPU measurement.**")
    for family, rows in by_family(results).items():
        headers, summary = eager_summary(rows)
        lines += ["", f"## {FAMILY_TITLES[family]}: eager µs per call (minimum)", "", markdown_table(headers, summary)]
    return "\n".join(lines)


LEADING_COLUMNS = ("family", "impl", "dtype", "m", "n")


def write_csv(results: Sequence[Dict], f: TextIO) -> None:
    """The result rows as CSV: every key any row has, a blank cell where a row lacks it.

    Times are in seconds, as in the JSON (`fwd_s`, `fwd_p20_s`, `fwd_p80_s`, `wall_fwd_s`, ...)."""
    columns = list(dict.fromkeys([*LEADING_COLUMNS, *(k for r in results for k in r)]))
    writer = csv.DictWriter(f, fieldnames=columns, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(results)


def finite_json(value):
    """`value` with every float that is not finite as the string float() reads back ("nan", "inf", "-inf"):
    strict JSON has no NaN or Infinity (json.dump's default writes them, which other readers refuse)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def write_json(value, path: str) -> None:
    """`value` as strict JSON (`finite_json`) in the file at `path`."""
    with open(path, "w") as f:
        json.dump(finite_json(value), f, indent=1, allow_nan=False)


def _by_shape(results: Sequence[Dict]) -> Dict[str, Dict[str, Dict]]:
    shapes: Dict[str, Dict[str, Dict]] = defaultdict(dict)
    for r in results:
        shapes[shape_label(r)][r["impl"]] = r
    return shapes


def _pass_table(results: Sequence[Dict], impls: Sequence[str], key: str) -> str:
    """µs per implementation for one pass ("fwd" / "bwd"), and the best with its % copy."""
    rows = []
    for label, by_impl in _by_shape(results).items():
        cells, best = [], None
        for name in impls:
            r = by_impl.get(name)
            if r is None or r.get("error") or r.get(f"{key}_s") is None:
                cells.append("fails" if r is not None and r.get("error") else "—")
                continue
            cells.append(fmt_us(r[f"{key}_s"]) + ("†" if r.get(f"{key}_method") == "do_bench" else ""))
            if best is None or r[f"{key}_s"] < best[f"{key}_s"]:
                best = r
        best_cell = "—" if best is None else (
            f"{best['impl']} {fmt_us(best[f'{key}_s'])}, {fmt_pct(best.get(f'{key}_pct'))}")
        rows.append([label, *cells, best_cell])
    return markdown_table(["dtype M×N", *impls, "best, % copy"], rows)


def render_markdown(results: Sequence[Dict], environment: Dict) -> str:
    """Tables for benchmarks/README.md, per family: backward, forward (GPU µs from CUDA-graph replays),
    eager wall time."""
    env = environment
    copy = env.get("copy_gbps")
    lines = [f"Device: {env.get('device', '?')} · torch {env.get('torch', '?')} · "
             f"triton {env.get('triton', '?')}"
             + "".join(f" · {k} {v}" for k, v in env.get("peers", {}).items())
             + (f" · copy bandwidth {copy:.0f} GB/s (D2D copy, bytes read + written)" if copy else "")]
    if env.get("dry_run"):
        lines.append("\n**Dry run: wall time on a tiny shape, not a GPU measurement.**")
    lines += ["", "GPU µs from CUDA-graph replays (median); % copy = minimum bytes / time / copy "
              "bandwidth; † = do_bench fallback (graph capture failed)."]
    for family, rows in by_family(results).items():
        lines += ["", f"## {FAMILY_TITLES[family]}", "", *_family_markdown(family, rows)]
    return "\n".join(lines)


def geomean_speedup(results: Sequence[Dict], key: str, ours: str = "normkit") -> Optional[Tuple[float, int]]:
    """(geometric mean over shapes of best peer time / our time, shapes counted) for one pass:
    only shapes where we and at least one peer have a time; None when there are none."""
    logs = []
    for by_impl in _by_shape(results).values():
        mine = by_impl.get(ours)
        peers = [r[f"{key}_s"] for name, r in by_impl.items()
                 if name != ours and not r.get("error") and r.get(f"{key}_s")]
        if mine is None or mine.get("error") or not mine.get(f"{key}_s") or not peers:
            continue
        logs.append(math.log(min(peers) / mine[f"{key}_s"]))
    return (math.exp(sum(logs) / len(logs)), len(logs)) if logs else None


def _family_markdown(family: str, results: Sequence[Dict]) -> List[str]:
    """The backward, forward and eager tables of one family's rows."""
    impls = list(dict.fromkeys(r["impl"] for r in results))
    tensors = PASS_TENSORS[family]
    lines = []
    for key, title in (("bwd", "Backward"), ("fwd", "Forward")):
        lines += [f"### {title} ({tensors[key]}·M·N·s bytes)", "", _pass_table(results, impls, key), ""]
        speedup = geomean_speedup(results, key)
        if speedup is not None:
            lines += [f"Geomean {title.lower()} speedup of normkit over the best measured peer: "
                      f"**{speedup[0]:.2f}×** ({speedup[1]} shapes)", ""]
    lines += ["### Eager wall time per call, µs (fwd / fwd+bwd through torch.autograd.grad)", ""]
    rows = []
    for label, by_impl in _by_shape(results).items():
        rows.append([label, *(
            "—" if by_impl.get(n) is None or by_impl[n].get("error")
            else f"{fmt_us(by_impl[n].get('wall_fwd_s'))} / {fmt_us(by_impl[n].get('wall_fwd_bwd_s'))}"
            for n in impls)])
    lines.append(markdown_table(["dtype M×N", *impls], rows))
    return lines


def plot(results: Sequence[Dict], path: str) -> Optional[str]:
    """PNG of % copy vs N, one line per implementation: forward and backward panels per family.

    Shapes that share N are averaged. Returns None when written, else why not (no matplotlib).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed"
    families = by_family(results)
    fig, axes = plt.subplots(len(families), 2, figsize=(12, 4.5 * len(families)), sharey=True,
                             squeeze=False)
    for row_axes, (family, rows) in zip(axes, families.items()):
        for ax, key, title in zip(row_axes, ("fwd", "bwd"), ("forward", "backward")):
            for impl in dict.fromkeys(r["impl"] for r in rows):
                points = defaultdict(list)
                for r in rows:
                    if r["impl"] == impl and r.get(f"{key}_pct") is not None:
                        points[r["n"]].append(r[f"{key}_pct"] / 100.0)
                if points:
                    ns = sorted(points)
                    ax.plot(ns, [sum(points[n]) / len(points[n]) for n in ns], marker="o",
                            label=impl)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("N (row length)")
            ax.set_title(f"{FAMILY_TITLES[family]} {title}")
            ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
            ax.grid(True, alpha=0.3)
        row_axes[0].set_ylabel("fraction of copy bandwidth")
        row_axes[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
