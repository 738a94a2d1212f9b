"""benchmarks/: the README's tables are what benchmarks/tables.py prints from benchmarks/results.json (no
number typed by hand); --write replaces only the text between the markers, --check fails when they differ,
--merge puts a run's rows in place of the shapes it measured. CPU only: no kernel runs here."""

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


def _marked(text, tables):
    return text.split(tables.BEGIN, 1)[1].split(tables.END, 1)[0]


def test_readme_tables_are_the_results(tables, data):
    """The README's marked block is exactly what the script prints from results.json: every family both
    ways, a summary and the runs; and --check agrees."""
    readme = (BENCHMARKS / "README.md").read_text()
    printed = tables.tables(data)
    assert _marked(readme, tables) == "\n" + printed
    families = {r["family"] for r in data["results"]}
    assert printed.count(": backward, µs") == printed.count(": forward, µs") == len(families) == 4
    assert printed.count("Geomean speedup over the best measured peer") == 2 * len(families)
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


def test_write_replaces_only_the_marked_tables(tables, data, tmp_path):
    """--write on a copy of the README, from results whose normkit rows were slowed: the block becomes
    the new tables, every byte outside the markers stays, --check fails before and passes after."""
    readme = tmp_path / "README.md"
    original = (BENCHMARKS / "README.md").read_text()
    readme.write_text(original)
    slower = copy.deepcopy(data)
    for row in slower["results"]:
        if row["impl"] == "normkit" and row.get("bwd_s"):
            row["bwd_s"] *= 2
    results = tmp_path / "results.json"
    results.write_text(json.dumps(slower))
    args = ["--results", str(results), "--readme", str(readme)]
    assert tables.main([*args, "--check"]) == 1
    assert tables.main([*args, "--write"]) == 0
    new = readme.read_text()
    assert _marked(new, tables) == "\n" + tables.tables(slower) != _marked(original, tables)
    before, after = original.split(tables.BEGIN), new.split(tables.BEGIN)
    assert before[0] == after[0] and before[1].split(tables.END)[1] == after[1].split(tables.END)[1]
    assert tables.main([*args, "--check"]) == 0
    readme.write_text(original.replace(tables.END, ""))
    with pytest.raises(ValueError, match="markers"):
        tables.main([*args, "--write"])


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


def test_help_lists_the_modes(tables, capsys):
    with pytest.raises(SystemExit) as exit_:
        tables.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in ("--write", "--check", "--merge", "--plot"))
