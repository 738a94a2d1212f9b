"""BENCHMARKS.md's "Current numbers" tables from a side-by-side run's raw rows (a development tool).

`python -m normkit bench --family all --impls normkit,native,compile,liger --json bench.json`
writes one row per (family, dtype, M, N, implementation); this prints, per family, the backward
and forward tables BENCHMARKS.md keeps (µs as the bench prints them, bold for the fastest measured,
the best's % of copy, the geomean speedup of normkit over the best measured peer). The backward
tables' quack (ANCHORS) and target columns are not measured: they are carried over from the
tables already in BENCHMARKS.md, row by row ("—" for a row it does not have).

    python tools/bench_tables.py docs/bench_h200_run_zzzi.json [--benchmarks BENCHMARKS.md] [--write]

--write puts them into BENCHMARKS.md in place of the section's tables and names the JSON as their raw
rows (the section's prose — which run, the copy bandwidth — stays for you to update).

tests/test_tools.py checks that the tables in BENCHMARKS.md are what this prints from the raw rows
the section names.
"""

import argparse
import json
import math
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from normkit.bench.output import FAMILY_TITLES as NAMES, fmt_us  # noqa: E402

IMPLS = ("normkit", "native", "compile", "liger")
DTYPES = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16"}
PASSES = {"bwd": "backward", "fwd": "forward"}


def carried_columns(benchmarks: str, family: str) -> dict:
    """{row label: (quack, target)} from the family's backward table in BENCHMARKS.md's text."""
    head = f"#### {NAMES[family]} — backward, µs"
    if head not in benchmarks:
        return {}
    out = {}
    for line in benchmarks.split(head, 1)[1].split("####", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 8 and cells[0] not in ("dtype M×N", "---"):
            out[cells[0]] = (cells[6], cells[7])
    return out


def tables(results: list, benchmarks: str) -> str:
    """The markdown of every family's backward and forward tables, in the run's row order."""
    rows, order = {}, []
    for r in results:
        key = (r["family"], DTYPES.get(r["dtype"], r["dtype"]), r["m"], r["n"])
        rows.setdefault(key, {})[r["impl"]] = r
        if key not in order:
            order.append(key)
    out = []
    for family in NAMES:
        keys = [k for k in order if k[0] == family]
        if not keys:
            continue
        carried = carried_columns(benchmarks, family)
        for kind in ("bwd", "fwd"):
            out.append(f"#### {NAMES[family]} — {PASSES[kind]}, µs\n")
            if kind == "bwd":
                out.append("| dtype M×N | normkit | native | compile | liger | best measured, % copy | quack (ANCHORS) | target |")
                out.append("|---|---|---|---|---|---|---|---|")
            else:
                out.append("| dtype M×N | normkit | native | compile | liger | best, % copy | normkit % copy |")
                out.append("|---|---|---|---|---|---|---|")
            ratios = []
            for key in keys:
                label = f"{key[1]} {key[2]}×{key[3]}"
                impl = rows[key]
                times = {i: impl[i].get(f"{kind}_s") if i in impl else None for i in IMPLS}
                ok = {i: t for i, t in times.items() if t}
                best = min(ok, key=ok.get)
                cells = []
                for i in IMPLS:
                    if i not in impl:
                        cells.append("—")
                    elif impl[i].get("error") or times[i] is None:
                        cells.append("fails")
                    else:
                        cells.append(f"**{fmt_us(times[i])}**" if i == best else fmt_us(times[i]))
                peers = [t for i, t in ok.items() if i != "normkit"]
                if times["normkit"] and peers:
                    ratios.append(min(peers) / times["normkit"])
                line = (f"| {label} | " + " | ".join(cells)
                        + f" | {best} {fmt_us(times[best])}, {impl[best][f'{kind}_pct']:.0f} % |")
                if kind == "bwd":
                    quack, target = carried.get(label, ("—", "—"))
                    line += f" {quack} | {target} |"
                else:
                    line += f" {impl['normkit'][f'{kind}_pct']:.0f} % |"
                out.append(line)
            geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
            out.append(f"\nGeomean speedup of normkit over the best measured peer, {PASSES[kind]}: "
                       f"**{geomean:.2f}×** ({len(ratios)} shapes).\n")
    return "\n".join(out)


def rewritten(benchmarks: str, results: list, raw_rows: str) -> str:
    """BENCHMARKS.md's text with the "Current numbers" section's six tables replaced by `tables`
    and the raw rows it names (the first `docs/bench_*.json` after "Raw rows:") set to raw_rows;
    the section's prose is left as it is."""
    start = benchmarks.index("## Current numbers")
    end = benchmarks.find("\n## ", start + 1)
    end = len(benchmarks) if end < 0 else end
    section = benchmarks[start:end]
    first = section.index(f"#### {NAMES['rms']} — backward, µs")
    headings = [i for i in range(first, len(section)) if section.startswith("#### ", i)]
    after = next((i for i in headings if not any(section.startswith(f"#### {name} — ", i) for name in NAMES.values())),
                 len(section))
    last = section.rindex("Geomean speedup of normkit", first, after)
    last = section.index("\n", last)
    section = section[:first] + tables(results, benchmarks).rstrip("\n") + section[last:]
    section, found = re.subn(r"(Raw rows:\s*`)docs/bench_[^`]+\.json(`)", lambda m: m.group(1) + raw_rows + m.group(2),
                             section, count=1)
    if not found:
        raise ValueError("the Current numbers section names no raw rows (\"Raw rows: `docs/bench_….json`\")")
    return benchmarks[:start] + section + benchmarks[end:]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("json", help="a `python -m normkit bench --json` file")
    p.add_argument("--benchmarks", default=str(ROOT / "BENCHMARKS.md"),
                   help="where the quack / target columns are carried from")
    p.add_argument("--write", action="store_true",
                   help="replace the Current numbers tables in --benchmarks and name the JSON as their raw rows "
                        "(the JSON must lie under the repository's docs/); the prose is yours to update")
    args = p.parse_args(argv)
    path = pathlib.Path(args.json).resolve()
    benchmarks = pathlib.Path(args.benchmarks)
    if not args.write:
        print(tables(json.loads(path.read_text())["results"], benchmarks.read_text()))
        return 0
    try:
        raw_rows = path.relative_to(ROOT).as_posix()
    except ValueError:
        raw_rows = ""
    if not (raw_rows.startswith("docs/bench_") and raw_rows.endswith(".json")):
        raise SystemExit(f"bench_tables: --write names the raw rows as docs/bench_*.json; got {args.json}")
    results = json.loads(path.read_text())["results"]
    benchmarks.write_text(rewritten(benchmarks.read_text(), results, raw_rows))
    print(f"bench_tables: {benchmarks} — tables from {raw_rows}; now update the section's prose (run, copy bandwidth)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
