"""benchmarks/: the README's tables are what benchmarks/tables.py prints from benchmarks/results.json (no
number typed by hand); --write replaces only the text between the markers, --check fails when they differ,
--merge puts a run's rows in place of the shapes it measured, --merge-eager does the same for an eager run
without touching the GPU-time rows. CPU only: no kernel runs here."""

import copy
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def tables():
    spec = importlib.util.spec_from_file_location("benchmark_tables", BENCHMARKS / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data():
    return json.loads((BENCHMARKS / "results.json").read_text())


def _marked(text, begin, end):
    return text.split(begin, 1)[1].split(end, 1)[0]


def test_readme_tables_are_the_results(tables, data):
    """The README's marked block is exactly what the script prints from results.json: every family both
    ways, a summary and the runs; and --check agrees."""
    readme = (BENCHMARKS / "README.md").read_text()
    printed = tables.tables(data)
    assert _marked(readme, tables.BEGIN, tables.END) == "\n" + printed
    families = {r["family"] for r in data["results"]}
    assert printed.count(": backward, µs") == printed.count(": forward, µs") == len(families) == 4
    assert all(f"| {tables.FAMILY_TITLES[f]} |" in printed for f in families)  # the summary's geomean rows
    for run in data["runs"]:  # every run the rows name is cited with its date and command
        assert run["date"] in printed and run["command"] in printed
    assert {r["run"] for r in data["results"]} == {run["name"] for run in data["runs"]}
    assert tables.main(["--check"]) == 0


def test_a_table_row_is_its_raw_rows(tables, data):
    """One row checked by hand: RMSNorm bf16 4096×16384's backward — normkit's µs and % of copy, each
    peer's µs, the speedup over the fastest peer and quack's quoted µs."""
    rows = {r["impl"]: r for r in data["results"]
            if (r["family"], r["dtype"], r["m"], r["n"]) == ("rms", "torch.bfloat16", 4096, 16384)}
    line = next(line for line in tables.pass_table(data, "rms", "bwd")[0].splitlines()
                if line.startswith("| bf16 4096×16384 |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    us = {impl: r["bwd_s"] * 1e6 for impl, r in rows.items()}
    assert float(cells[1].strip("*")) == pytest.approx(us["normkit"], abs=0.5)
    assert cells[2] == f"{rows['normkit']['bwd_pct']:.0f} %"
    assert [float(c.strip("*")) for c in cells[3:6]] == pytest.approx(
        [us["native"], us["compile"], us["liger"]], abs=0.5)
    best_peer = min(us[i] for i in ("native", "compile", "liger"))
    assert cells[6] == f"{best_peer / us['normkit']:.2f}×"
    quoted = next(q["us"] for q in data["quoted"]["rows"]
                  if (q["family"], q["pass"], q["m"], q["n"]) == ("rms", "bwd", 4096, 16384))
    assert cells[7] == f"{quoted:g}"


def test_readme_eager_table_is_the_results(tables, data):
    """The README's eager block is exactly what the script prints from results.json's eager section, every
    eager run is cited with its date, loop sizes and command, and the eager rows are apart from the GPU rows."""
    readme = (BENCHMARKS / "README.md").read_text()
    printed = tables.eager_tables(data)
    assert _marked(readme, tables.EAGER_BEGIN, tables.EAGER_END) == "\n" + printed
    eager = data["eager"]
    for run in eager["runs"]:
        loop = run["environment"]["eager"]
        assert run["date"] in printed and run["command"] in printed
        assert f"{loop['repeats']} loops of {loop['calls']} calls" in printed
    assert {r["run"] for r in eager["results"]} == {run["name"] for run in eager["runs"]}
    assert not any("fwd_s" in r for r in eager["results"]) and not any("eager_fwd_s" in r for r in data["results"])
    assert printed.count("| fwd (no grad) |") == printed.count("| fwd + bwd |") == len(
        {tables.shape_key(r) for r in eager["results"]})


def test_an_eager_row_is_its_raw_rows(tables, data):
    """One eager row checked by hand: RMSNorm bf16 8×4096 fwd + bwd — each implementation's minimum and
    median (p20–p80) µs, the lowest minimum in bold, normkit ÷ native and the slowest."""
    rows = {r["impl"]: r for r in data["eager"]["results"]
            if (r["family"], r["dtype"], r["m"], r["n"]) == ("rms", "torch.bfloat16", 8, 4096)}
    line = next(line for line in tables.eager_table(data["eager"], "rms")[0].splitlines()
                if line.startswith("| bf16 8×4096 | fwd + bwd |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    impls = ["normkit", "native", "compile", "liger"]
    mins = {i: rows[i]["eager_fwd_bwd_min_s"] * 1e6 for i in impls}
    for impl, cell in zip(impls, cells[2:6]):
        low, spread = cell.split(" / ")
        assert low.startswith("**") == (impl == min(mins, key=mins.get))
        assert float(low.strip("*")) == pytest.approx(mins[impl], rel=5e-3)
        median, p20, p80 = (rows[impl][f"eager_fwd_bwd{k}_s"] * 1e6 for k in ("", "_p20", "_p80"))
        assert float(spread.split(" (")[0]) == pytest.approx(median, rel=5e-3)
        assert [float(v) for v in spread.split(" (")[1].rstrip(")").split("–")] == pytest.approx([p20, p80], rel=5e-3)
    assert cells[6] == f"{mins['normkit'] / mins['native']:.2f}×"
    assert cells[7] == tables.PEERS.get(max(mins, key=mins.get), max(mins, key=mins.get))


def test_write_replaces_only_the_marked_tables(tables, data, tmp_path):
    """--write on a copy of the README, from results whose normkit rows (GPU and eager) were slowed: both
    blocks become the new tables, every byte outside the markers stays, --check fails before and passes
    after; a README without one block's markers is refused."""
    readme = tmp_path / "README.md"
    original = (BENCHMARKS / "README.md").read_text()
    readme.write_text(original)
    slower = copy.deepcopy(data)
    for row in slower["results"]:
        if row["impl"] == "normkit" and row.get("bwd_s"):
            row["bwd_s"] *= 2
    for row in slower["eager"]["results"]:
        if row["impl"] == "normkit":
            row["eager_fwd_min_s"] *= 2
    results = tmp_path / "results.json"
    results.write_text(json.dumps(slower))
    args = ["--results", str(results), "--readme", str(readme)]
    assert tables.main([*args, "--check"]) == 1
    assert tables.main([*args, "--write"]) == 0
    new = readme.read_text()
    for begin, end, block in [(tables.BEGIN, tables.END, tables.tables(slower)),
                              (tables.EAGER_BEGIN, tables.EAGER_END, tables.eager_tables(slower))]:
        assert _marked(new, begin, end) == "\n" + block != _marked(original, begin, end)
    outside = [tables.BEGIN, tables.END, tables.EAGER_BEGIN, tables.EAGER_END]
    assert _outside(original, outside) == _outside(new, outside)
    assert tables.main([*args, "--check"]) == 0
    for marker in (tables.END, tables.EAGER_BEGIN):
        readme.write_text(original.replace(marker, ""))
        with pytest.raises(ValueError, match="markers"):
            tables.main([*args, "--write"])


def _outside(text, markers):
    """The text outside the marked blocks: before the first, between an end and the next begin, after the last."""
    parts, rest = [], text
    for begin, end in zip(markers[::2], markers[1::2]):
        head, rest = rest.split(begin, 1)
        parts.append(head)
        rest = rest.split(end, 1)[1]
    return parts + [rest]


def test_merge_replaces_whole_shapes_and_appends_new_ones(tables):
    """A run's rows replace every implementation of the shapes it measured (in place) and add the
    shapes that are new; runs no row names any more are dropped; a run's name must be new."""
    def row(impl, n, us):
        return {"family": "rms", "impl": impl, "dtype": "torch.bfloat16", "m": 8, "n": n, "bwd_s": us * 1e-6}

    first = tables.merged(None, {"environment": {"copy_gbps": 1.0}, "results": [
        row("normkit", 1024, 10), row("liger", 1024, 20), row("normkit", 2048, 30)]}, "a", "2026-01-01", "cmd a")
    second = tables.merged(first, {"environment": {"copy_gbps": 2.0}, "results": [
        row("normkit", 1024, 11), row("normkit", 4096, 40)]}, "b", "2026-01-02", "cmd b")
    assert [(r["n"], r["impl"], r["run"]) for r in second["results"]] == [
        (1024, "normkit", "b"), (2048, "normkit", "a"), (4096, "normkit", "b")]
    assert [run["name"] for run in second["runs"]] == ["a", "b"]
    third = tables.merged(second, {"environment": {}, "results": [row("normkit", 2048, 31)]}, "c", "2026-01-03", "c")
    assert [run["name"] for run in third["runs"]] == ["b", "c"]
    with pytest.raises(ValueError, match="--name"):
        tables.merged(third, {"environment": {}, "results": []}, "c", "2026-01-04", "again")


def _eager_run(m, normkit_us, native_us):
    """A `bench --eager --json` file's content: one RMSNorm shape, normkit and native."""
    def row(impl, us):
        return {"family": "rms", "impl": impl, "dtype": "torch.bfloat16", "m": m, "n": 4096,
                **{f"{key}{stat}_s": us * 1e-6 for key in ("eager_fwd_no_grad", "eager_fwd", "eager_fwd_bwd")
                   for stat in ("_min", "_p20", "", "_p80")}}
    return {"environment": {"device": "NVIDIA H200", "torch": "2.11.0", "triton": "3.6.0", "peers": {},
                            "eager": {"calls": 100, "repeats": 20, "warmup": 10}},
            "results": [row("normkit", normkit_us), row("native", native_us)]}


def test_merge_eager_adds_a_run_beside_the_gpu_rows(tables, data, tmp_path):
    """--merge-eager on a copy of results.json: the eager run replaces the eager rows of the shape it
    measured and appends its new shape, the GPU-time rows and runs stay byte for byte, the printed eager
    table cites the run; a GPU file given to --merge-eager (or an eager one to --merge) is refused."""
    results = tmp_path / "results.json"
    results.write_text(json.dumps(data))
    eager_file = tmp_path / "eager.json"
    eager_file.write_text(json.dumps({**_eager_run(8, 20.0, 10.0), "results": [
        *_eager_run(8, 20.0, 10.0)["results"], *_eager_run(64, 30.0, 15.0)["results"]]}))
    merge = ["--results", str(results), "--merge-eager", str(eager_file), "--name", "eager-next",
             "--date", "2026-12-31", "--command", "python -m normkit bench --eager --json eager.json"]
    assert tables.main(merge) == 0
    new = json.loads(results.read_text())
    assert new["results"] == data["results"] and new["runs"] == data["runs"] and new["quoted"] == data["quoted"]
    by_shape = {}
    for r in new["eager"]["results"]:
        by_shape.setdefault((r["m"], r["n"]), set()).add((r["impl"], r["run"]))
    assert by_shape[(8, 4096)] == {("normkit", "eager-next"), ("native", "eager-next")}  # liger's old row gone
    assert by_shape[(64, 4096)] == {("normkit", "eager-next"), ("native", "eager-next")}
    old = data["eager"]["runs"][-1]["name"]  # (the recorded run: its other shapes stay)
    assert by_shape[(1, 4096)] == {(i, old) for i in ("normkit", "native", "compile", "liger")}
    assert [run["name"] for run in new["eager"]["runs"]] == [old, "eager-next"]
    printed = tables.eager_tables(new)
    assert "`eager-next`, 2026-12-31" in printed and "python -m normkit bench --eager --json eager.json" in printed
    assert "| bf16 64×4096 | fwd + bwd | 30 / 30 (30–30) | **15** / 15 (15–15) | — | — | 2.00× | normkit |" in printed
    with pytest.raises(ValueError, match="--name"):
        tables.main(merge)
    gpu_file = tmp_path / "bench.json"
    gpu_file.write_text(json.dumps({"environment": {"copy_gbps": 1.0}, "results": []}))
    cited = ["--name", "other", "--date", "2026-12-31", "--command", "c"]
    with pytest.raises(ValueError, match="--merge-eager expects a `bench --eager --json` file.*use --merge$"):
        tables.main(["--results", str(results), "--merge-eager", str(gpu_file), *cited])
    with pytest.raises(ValueError, match="--merge expects a GPU-time .*use --merge-eager"):
        tables.main(["--results", str(results), "--merge", str(eager_file), *cited])
    with pytest.raises(SystemExit):
        tables.main(["--results", str(results), "--merge-eager", str(eager_file)])  # no --name, --date, --command
    assert json.loads(results.read_text()) == new  # refused merges leave the file as it was


def test_help_lists_the_modes(tables, capsys):
    with pytest.raises(SystemExit) as exit_:
        tables.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in ("--write", "--check", "--merge", "--merge-eager", "--plot"))
