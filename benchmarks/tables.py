"""benchmarks/README.md's tables, printed from benchmarks/results.json (no number typed by hand).

results.json holds the raw rows of `python -m normkit bench --json` runs, each row tagged with the
run it came from ("run"), the runs' date, command and environment ("runs"), numbers quoted from
elsewhere, never measured here ("quoted": quack's, from the project's peer anchors), and under "eager"
the same layout for `python -m normkit bench --eager --json` runs (host-included time per call).

    python benchmarks/tables.py                     # print the tables
    python benchmarks/tables.py --write             # put them into benchmarks/README.md, between their markers
    python benchmarks/tables.py --check             # exit 1 when README.md's tables differ from results.json
    python benchmarks/tables.py --plot h200.png     # % of copy against N (needs matplotlib)
    python benchmarks/tables.py --merge bench.json --date 2026-12-01 --name wide --command "python -m normkit bench …"
    python benchmarks/tables.py --merge-eager eager.json --date 2026-12-04 --name eager --command "python -m normkit bench --eager …"

--merge adds a bench run to results.json: its rows replace every row of the same (family, dtype,
M, N) — all implementations of a shape come from one run, so a shape's peers were measured beside
normkit — and shapes it is alone in are appended. --merge-eager does the same for a `bench --eager`
run, in results.json's "eager" section; the GPU-time rows stay as they are. Then --write.
"""

import argparse
import json
import math
import pathlib
import sys
from typing import Dict, List, Optional, Sequence

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from normkit.bench.output import (EAGER_PASSES, FAMILY_TITLES, fmt_pct, fmt_spread, fmt_us,  # noqa: E402
                                  geomean_speedup, markdown_table, plot, shape_label)

RESULTS = HERE / "results.json"
README = HERE / "README.md"
BEGIN, END = "<!-- tables:begin (benchmarks/tables.py --write) -->", "<!-- tables:end -->"
EAGER_BEGIN, EAGER_END = "<!-- eager:begin (benchmarks/tables.py --write) -->", "<!-- eager:end -->"
PEERS = {"native": "native", "compile": "torch.compile", "liger": "Liger"}
PASSES = {"bwd": "backward", "fwd": "forward"}
LARGE_BYTES = 2**26  # "64 MiB or more a tensor": shapes too large for L2 to flatter anyone
ELEMENT_SIZES = {"torch.float16": 2, "torch.bfloat16": 2, "torch.float32": 4, "torch.float64": 8}


def shape_key(row: Dict) -> tuple:
    return row["family"], row["dtype"], row["m"], row["n"]


def _time(row: Optional[Dict], kind: str) -> Optional[float]:
    return None if row is None or row.get("error") else row.get(f"{kind}_s")


def _shapes(results: Sequence[Dict], family: str) -> Dict[tuple, Dict[str, Dict]]:
    """{shape: {impl: row}} of one family, shapes in the file's order."""
    shapes: Dict[tuple, Dict[str, Dict]] = {}
    for r in results:
        if r["family"] == family:
            shapes.setdefault(shape_key(r), {})[r["impl"]] = r
    return shapes


def _quoted(data: Dict, family: str, kind: str) -> Dict[tuple, float]:
    """{shape: µs} quoted for quack (not measured here) in this family and pass."""
    return {(q["family"], q["dtype"], q["m"], q["n"]): q["us"] for q in data.get("quoted", {}).get("rows", [])
            if q["family"] == family and q["pass"] == kind}


def pass_table(data: Dict, family: str, kind: str) -> List[str]:
    """One family's table for one pass: µs per implementation (bold: fastest measured), normkit's % of
    copy, best measured peer / normkit, and quack's quoted µs where the family has any."""
    quoted = _quoted(data, family, kind)
    headers = ["dtype M×N", "normkit", "% of copy", *PEERS.values(), "best peer / normkit"] + (["quack (quoted)"] if quoted else [])
    rows = []
    for key, by_impl in _shapes(data["results"], family).items():
        times = {impl: _time(by_impl.get(impl), kind) for impl in ("normkit", *PEERS)}
        measured = {impl: t for impl, t in times.items() if t}
        best = min(measured, key=measured.get) if measured else None
        cells = []
        for impl, t in times.items():
            if impl not in by_impl:
                cells.append("—")
            elif t is None:
                cells.append("fails")
            else:
                cells.append(f"**{fmt_us(t)}**" if impl == best else fmt_us(t))
        peers = [t for impl, t in measured.items() if impl != "normkit"]
        speedup = f"{min(peers) / times['normkit']:.2f}×" if peers and times["normkit"] else "—"
        pct = fmt_pct(by_impl["normkit"].get(f"{kind}_pct")) if "normkit" in by_impl else "—"
        row = [shape_label(next(iter(by_impl.values()))), cells[0], pct, *cells[1:], speedup]
        if quoted:
            row.append(f"{quoted[key]:g}" if key in quoted else "—")
        rows.append(row)
    return [markdown_table(headers, rows)]


def _pct_range(results: Sequence[Dict], kind: str) -> str:
    pcts = [r[f"{kind}_pct"] for r in results if r["impl"] == "normkit" and r.get(f"{kind}_pct")]
    return f"{min(pcts):.0f}-{max(pcts):.0f} %" if pcts else "—"


def _geomean(results: Sequence[Dict], kind: str) -> Optional[tuple]:
    """(geomean over shapes of best measured peer / normkit, shapes) — families' shapes kept apart."""
    logs = []
    for family in FAMILY_TITLES:
        speedup = geomean_speedup([r for r in results if r["family"] == family], kind)
        if speedup:
            logs.append((math.log(speedup[0]) * speedup[1], speedup[1]))
    count = sum(n for _, n in logs)
    return (math.exp(sum(s for s, _ in logs) / count), count) if count else None


def _geomean_cell(results: Sequence[Dict], kind: str) -> str:
    speedup = _geomean(results, kind)
    return f"{speedup[0]:.2f}× ({speedup[1]} shapes)" if speedup else "—"


def headline(data: Dict) -> List[str]:
    """One line a pass: where normkit is the fastest measured, its geomean speedup, its % of copy."""
    lines = []
    for kind in PASSES:
        shapes = [by_impl for family in FAMILY_TITLES for by_impl in _shapes(data["results"], family).values()
                  if _time(by_impl.get("normkit"), kind)]
        fastest = sum(min((i for i in by_impl if _time(by_impl[i], kind)), key=lambda i: _time(by_impl[i], kind))
                      == "normkit" for by_impl in shapes)
        large = [r for r in data["results"] if r["impl"] == "normkit"
                 and r["m"] * r["n"] * ELEMENT_SIZES[r["dtype"]] >= LARGE_BYTES]
        speedup, count = _geomean(data["results"], kind)
        lines.append(f"- **{PASSES[kind].capitalize()}** ({len(shapes)} shapes): normkit the fastest measured on "
                     f"{fastest}; geomean speedup over the best measured peer **{speedup:.2f}×** ({count} shapes "
                     f"with a peer); **{_pct_range(data['results'], kind)}** of copy, {_pct_range(large, kind)} on "
                     f"the {len(large)} shapes of 64 MiB or more a tensor.")
    return lines


def summary(data: Dict) -> List[str]:
    """Per family and overall: the geomean speedup over the best measured peer and normkit's % of copy."""
    rows = []
    families = [f for f in FAMILY_TITLES if any(r["family"] == f for r in data["results"])]
    for label, rows_of in [(FAMILY_TITLES[f], [r for r in data["results"] if r["family"] == f]) for f in families] + [
            ("all families", data["results"])]:
        rows.append([label, *(cell for kind in PASSES for cell in (_geomean_cell(rows_of, kind),
                                                                    _pct_range(rows_of, kind)))])
    return [markdown_table(["family", "backward: speedup over the best measured peer (geomean)",
                            "backward: normkit % of copy", "forward: speedup (geomean)", "forward: % of copy"], rows)]


def error_table(data: Dict) -> List[str]:
    """The largest relative error against float64 (any output, any family) per dtype and implementation."""
    worst: Dict[str, Dict[str, float]] = {}
    for r in data["results"]:
        errors = [v for k, v in r.items() if k.startswith("err_") and v is not None]
        if errors and not r.get("error"):
            dtype = shape_label(r).split()[0]
            worst.setdefault(dtype, {})[r["impl"]] = max(worst.get(dtype, {}).get(r["impl"], 0.0), max(errors))
    rows = [[dtype, *(f"{by_impl[i]:.1e}" if i in by_impl else "—" for i in ("normkit", *PEERS))]
            for dtype, by_impl in worst.items()]
    return [markdown_table(["dtype", "normkit", *PEERS.values()], rows)]


def _environment(env: Dict) -> str:
    peers = "".join(f", {name} {version}" for name, version in env.get("peers", {}).items())
    return f"{env['device']}, torch {env['torch']}, triton {env['triton']}{peers}"


def runs_list(data: Dict) -> List[str]:
    """Each run behind the tables: date, environment, copy bandwidth, shapes, command."""
    lines = []
    for run in data["runs"]:
        shapes = {shape_key(r) for r in data["results"] if r["run"] == run["name"]}
        lines.append(f"- `{run['name']}`, {run['date']}: {_environment(run['environment'])}; copy "
                     f"{run['environment']['copy_gbps']:.0f} GB/s; {len(shapes)} shapes in the tables. "
                     f"`{run['command']}`")
    return lines


def tables(data: Dict) -> str:
    """The markdown README.md keeps between its markers."""
    out = ["### Summary", "", *headline(data), "", *summary(data), "", "### Runs", "", *runs_list(data)]
    for family in FAMILY_TITLES:
        if not any(r["family"] == family for r in data["results"]):
            continue
        for kind in PASSES:
            # each family's geomean speedup is in the summary table, not repeated under its tables
            out += ["", f"### {FAMILY_TITLES[family]}: {PASSES[kind]}, µs", "", *pass_table(data, family, kind)]
    out += ["", "### Largest error against float64 (relative, any output, every shape)", "", *error_table(data)]
    return "\n".join(out) + "\n"


def eager_runs(eager: Dict) -> List[str]:
    """Each eager run: date, environment, loop sizes, shapes, command."""
    lines = []
    for run in eager["runs"]:
        loop = run["environment"]["eager"]
        shapes = {shape_key(r) for r in eager["results"] if r["run"] == run["name"]}
        lines.append(f"- `{run['name']}`, {run['date']}: {_environment(run['environment'])}; {loop['warmup']} "
                     f"warm-up calls, then {loop['repeats']} loops of {loop['calls']} calls, one synchronize a "
                     f"loop; {len(shapes)} shapes. `{run['command']}`")
    return lines


def eager_table(eager: Dict, family: str) -> List[str]:
    """One family's eager rows: per shape and pass, each implementation's µs per call as minimum / median
    (p20–p80) (bold: the lowest minimum), normkit's minimum ÷ native's, and the slowest by minimum."""
    rows_of = [r for r in eager["results"] if r["family"] == family]
    impls = [i for i in dict.fromkeys(["normkit", *PEERS, *(r["impl"] for r in rows_of)])
             if any(r["impl"] == i for r in rows_of)]
    rows = []
    for by_impl in _shapes(rows_of, family).values():
        for key, name in EAGER_PASSES:
            mins = {impl: r[f"{key}_min_s"] for impl, r in by_impl.items()
                    if not r.get("error") and r.get(f"{key}_min_s")}
            fastest = min(mins, key=mins.get) if mins else None
            cells = []
            for impl in impls:
                if impl not in mins:
                    cells.append("fails" if by_impl.get(impl, {}).get("error") else "—")
                else:
                    low = fmt_us(mins[impl])
                    cells.append(f"{f'**{low}**' if impl == fastest else low} / {fmt_spread(by_impl[impl], key)}")
            ratio = f"{mins['normkit'] / mins['native']:.2f}×" if {"normkit", "native"} <= set(mins) else "—"
            slowest = max(mins, key=mins.get) if len(mins) > 1 else None
            rows.append([shape_label(next(iter(by_impl.values()))), name, *cells, ratio,
                         PEERS.get(slowest, slowest) if slowest else "—"])
    return [markdown_table(["dtype M×N", "pass", *(PEERS.get(i, i) for i in impls), "normkit ÷ native (min)",
                            "slowest"], rows)]


def eager_tables(data: Dict) -> str:
    """The markdown README.md keeps between its eager markers: the runs, then a table a family."""
    eager = data.get("eager")
    if not eager or not eager["results"]:
        return "No `python -m normkit bench --eager` run in results.json yet.\n"
    out = [*eager_runs(eager)]
    for family in FAMILY_TITLES:
        if any(r["family"] == family for r in eager["results"]):
            out += ["", f"### {FAMILY_TITLES[family]}: µs per call, minimum / median (p20–p80)", "",
                    *eager_table(eager, family)]
    return "\n".join(out) + "\n"


def rewritten(readme: str, block: str, begin: str = BEGIN, end: str = END) -> str:
    """README's text with what lies between the markers `begin` and `end` replaced by `block`."""
    if readme.count(begin) != 1 or readme.count(end) != 1 or readme.index(begin) > readme.index(end):
        raise ValueError(f"README must hold the markers {begin!r} and {end!r} once each, in that order")
    head, rest = readme.split(begin, 1)
    return head + begin + "\n" + block + end + rest.split(end, 1)[1]


def with_tables(readme: str, data: Dict) -> str:
    """README's text with both marked blocks (GPU tables, eager tables) printed from `data`."""
    return rewritten(rewritten(readme, tables(data)), eager_tables(data), EAGER_BEGIN, EAGER_END)


def merged(data: Optional[Dict], bench: Dict, name: str, date: str, command: str) -> Dict:
    """results.json with a bench run's rows in place of the rows of the shapes it measured."""
    data = data or {"runs": [], "results": []}
    if any(run["name"] == name for run in data["runs"]):
        raise ValueError(f"--name must be new to results.json, got {name!r} (runs: "
                         f"{', '.join(run['name'] for run in data['runs'])})")
    new = [dict(row, run=name) for row in bench["results"]]
    by_shape: Dict[tuple, List[Dict]] = {}
    for row in new:
        by_shape.setdefault(shape_key(row), []).append(row)
    results, placed = [], set()
    for row in data["results"]:
        key = shape_key(row)
        if key not in by_shape:
            results.append(row)
        elif key not in placed:
            results += by_shape[key]
            placed.add(key)
    results += [row for row in new if shape_key(row) not in placed]
    used = {row["run"] for row in results}
    runs = [run for run in data["runs"] if run["name"] in used] + [
        {"name": name, "date": date, "command": command, "environment": bench["environment"]}]
    return {**data, "runs": runs, "results": results}


def merged_file(data: Optional[Dict], bench: Dict, name: str, date: str, command: str, eager: bool) -> Dict:
    """results.json with a `bench --json` run merged (`eager`: a `bench --eager --json` run, into "eager")."""
    flag, other = ("--merge-eager", "--merge") if eager else ("--merge", "--merge-eager")
    if not (isinstance(bench, dict) and isinstance(bench.get("results"), list)
            and isinstance(bench.get("environment"), dict)):
        got = f"keys {sorted(bench)}" if isinstance(bench, dict) else f"a {type(bench).__name__}"
        raise ValueError(f"{flag} expects the JSON of `python -m normkit bench --json` (keys 'environment' and "
                         f"'results'), got {got}")
    files = {True: "a `bench --eager --json` file", False: "a GPU-time `bench --json` file (no --eager)"}
    if ("eager" in bench["environment"]) != eager:
        raise ValueError(f"{flag} expects {files[eager]}, got {files[not eager]}; use {other}")
    data = data or {"runs": [], "results": []}
    if eager:
        return {**data, "eager": merged(data.get("eager"), bench, name, date, command)}
    return merged(data, bench, name, date, command)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("--results", default=str(RESULTS), help="the results file (default: benchmarks/results.json)")
    p.add_argument("--readme", default=str(README), help="the README holding the tables (default: benchmarks/README.md)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="replace the tables between README's markers")
    mode.add_argument("--check", action="store_true", help="exit 1 when README's tables differ from the results")
    mode.add_argument("--merge", metavar="BENCH_JSON", help="add a `python -m normkit bench --json` file to the results")
    mode.add_argument("--merge-eager", metavar="EAGER_JSON",
                      help="add a `python -m normkit bench --eager --json` file to the results' eager section")
    mode.add_argument("--plot", metavar="PNG", help="draw %% of copy against N, every family and implementation "
                      "(needs matplotlib)")
    p.add_argument("--name", help="--merge, --merge-eager: a short name for the run (new to its section)")
    p.add_argument("--date", help="--merge, --merge-eager: the day the run was measured, YYYY-MM-DD")
    p.add_argument("--command", help="--merge, --merge-eager: the command that produced the bench file")
    args = p.parse_args(argv)
    results = pathlib.Path(args.results)
    if args.merge or args.merge_eager:
        if not (args.name and args.date and args.command):
            p.error(f"{'--merge' if args.merge else '--merge-eager'} needs --name, --date and --command "
                    "(README cites them)")
        data = json.loads(results.read_text()) if results.exists() else None
        bench = json.loads(pathlib.Path(args.merge or args.merge_eager).read_text())
        data = merged_file(data, bench, args.name, args.date, args.command, eager=bool(args.merge_eager))
        results.write_text(json.dumps(data, indent=1) + "\n")
        section = data["eager"] if args.merge_eager else data
        print(f"tables: {results} now holds {len(section['results'])} {'eager ' if args.merge_eager else ''}rows "
              f"from {len(section['runs'])} runs; run --write next")
        return 0
    if args.plot:
        why_not = plot(json.loads(results.read_text())["results"], args.plot)
        if why_not:
            raise SystemExit(f"tables: no plot: {why_not}")
        return 0
    data = json.loads(results.read_text())
    if not (args.write or args.check):
        print(tables(data) + "\n" + eager_tables(data), end="")
        return 0
    readme = pathlib.Path(args.readme)
    text = readme.read_text()
    new = with_tables(text, data)
    if args.check:
        if new != text:
            print(f"tables: {readme}'s tables differ from {results}; run benchmarks/tables.py --write", file=sys.stderr)
            return 1
        return 0
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
