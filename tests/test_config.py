"""Every launch decision `normkit.config` makes, against a committed record (tests/data/config_picks.txt).

The record holds `tile_config`'s pick for every N in 1 … 262144 in every scenario below (direction, element
sizes of x, y and the residual, residual, LayerNorm, weight heads, SM count, vector alignment, recompute,
interpreter), and the other pure launch functions (`may_stage`, `finish_config`, `resident_programs`, and per
picked tile `fit_block_m`, `split_parts`, `backward_grid`, `even_cols`, `joins_stats`, `takes_pairs`,
`holds_pairs`) over their own inputs. The test only compares: a change to the heuristics that moves any pick
fails it, with the first N that moved. Regenerate after an intended change (and say why in the commit):

    python -m tests.test_config --write            # the record, from the code as it is now
    python -m tests.test_config --write --every-n  # the same, calling tile_config at every N (minutes)

Cost: calling `tile_config` at each of 262144 N in ~900 scenarios takes ~15 minutes, so the walk
(tests/config_cases.py `walk`) asks it about ranges of N at once: where every decision the code takes is the same
for all N of a range, one call answers for the range; where one is not, the range is halved, down to single N.
"""

import argparse
import dataclasses
import itertools
import os
import sys
from typing import Dict, Iterator, List, Tuple

from normkit import config as cfg
from tests.config_cases import decision, walk

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "config_picks.txt")
N_MAX = 262144
# (weight heads, SMs): an H200 (132), an A100 (108), an H20 (78), a tiny part (4); heads split the SMs' slots
HEADS_SMS = ((1, 132), (8, 132), (64, 132), (1, 108), (1, 78), (1, 4))
SIZES = (2, 4, 8)  # bytes per element of x: bf16/fp16, fp32, fp64


# ---- what is recorded ----

def _tile_config():
    return getattr(cfg.tile_config, "__wrapped__", cfg.tile_config)


def tile_scenarios() -> Iterator[Tuple[str, dict]]:
    """(label, tile_config's keyword arguments but n) for every scenario the record holds."""
    for backward in (False, True):
        for element_size in (2, 4):
            yield (f"tile_config interpret backward={backward} element_size={element_size}",
                   dict(backward=backward, interpret=True, element_size=element_size))
    for (heads, sms), residual, layer_norm, size in itertools.product(HEADS_SMS, (False, True), (False, True), SIZES):
        common = dict(interpret=False, heads=heads, multiprocessors=sms, residual=residual, layer_norm=layer_norm,
                      element_size=size)
        others = [0] + [s for s in SIZES if s != size]  # 0: as x's
        for out_size, residual_size in itertools.product(others, others):
            yield (f"tile_config forward heads={heads} sms={sms} residual={residual} layer_norm={layer_norm} "
                   f"x={size} y={out_size} residual_size={residual_size}",
                   dict(common, backward=False, out_element_size=out_size, residual_element_size=residual_size))
        for aligned, recompute in itertools.product((True, False), (False, True)):
            yield (f"tile_config backward heads={heads} sms={sms} residual={residual} layer_norm={layer_norm} "
                   f"x={size} vector_aligned={aligned} recompute={recompute}",
                   dict(common, backward=True, vector_aligned=aligned, recompute=recompute))


def _tile_lines() -> Dict[str, list]:
    pick = _tile_config()
    return {label: walk(lambda n, kw=kwargs: pick(n, **kw), 1, N_MAX) for label, kwargs in tile_scenarios()}


FINISH_ROWS = (1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 132, 256, 257, 264, 512, 513, 528, 1024, 2112)
RESIDENT_SHARED = (0, 1024, 8192, 16384, 24576, 32768, 49152, 65536, 73728, 98304, 114688, 131072, 196608, 232448)
WARPS = (1, 2, 4, 8, 16, 32)


def _function_lines() -> Dict[str, list]:
    finish = getattr(cfg.finish_config, "__wrapped__", cfg.finish_config)
    lines = {f"may_stage element_size={size}": walk(lambda n, s=size: cfg.may_stage(n, s), 1, N_MAX)
             for size in (1, 2, 4, 8)}
    for interpret, rows in itertools.product((False, True), FINISH_ROWS):
        lines[f"finish_config interpret={interpret} rows={rows}"] = walk(
            lambda n, i=interpret, r=rows: finish(i, r, n), 1, 64 * N_MAX)
    for warps, shared in itertools.product(WARPS, RESIDENT_SHARED):
        lines[f"resident_programs num_warps={warps} shared_bytes={shared}"] = walk(
            lambda r, w=warps, s=shared: cfg.resident_programs(r, w, s), 0, 256)
    return lines


FIT_ROWS = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 1000)
GRID_ROWS = (1, 3, 65, 1000, 65536, 1 << 20)
GRID_RESIDENT = (None, 1, 3)


def _per_tile(config: cfg.TileConfig) -> Dict[str, list]:
    """What the launchers derive from a picked tile, at a few inputs each (in the order of the names' lists)."""
    b = config.block_n
    widths = sorted({max(1, b - 1), b, b + 1, 2 * b, 3 * b + 1, N_MAX})
    grid = lambda *args, **kw: decision(lambda _: cfg.backward_grid(config, *args, **kw), 0)  # noqa: E731
    return {
        "joins_stats layer_norm=False,True": [cfg.joins_stats(config, False), cfg.joins_stats(config, True)],
        "takes_pairs backward=False,True holds_pairs": [cfg.takes_pairs(config, False),
                                                        cfg.takes_pairs(config, True), cfg.holds_pairs(config)],
        "even_cols element_size=1,2,4,8 x n": [cfg.even_cols(config, n, s) for s in (1, 2, 4, 8) for n in widths],
        "split_parts n": [cfg.split_parts(config, n) for n in widths],
        "fit_block_m m in FIT_ROWS": [cfg.fit_block_m(config, m) for m in FIT_ROWS],
        "backward_grid sms x heads x m in GRID_ROWS x resident in GRID_RESIDENT, n=3*block_n+1": [
            grid(m, sms, n=3 * b + 1, heads=heads, resident=resident)
            for sms in (132, 108, 78, 4) for heads in (1, 8, 64) for m in GRID_ROWS for resident in GRID_RESIDENT],
    }


# ---- the record's text ----

class Record:
    """The record: numbered tiles (`#id` and every TileConfig field), then `label | tokens` lines. A walked
    line's tokens are `first_n:value` runs, each lasting to the next; a per-tile line (`tile #id …`) holds
    values in the order its label names."""

    def __init__(self):
        self.tiles: Dict[str, int] = {}  # a tile's text → its id
        self.lines: Dict[str, str] = {}

    def token(self, value) -> str:
        if isinstance(value, cfg.TileConfig):
            text = " ".join(f"{f.name}={getattr(value, f.name)!r}" for f in dataclasses.fields(value))
            return f"#{self.tiles.setdefault(text, len(self.tiles))}"
        if isinstance(value, str):  # decision's refusal
            return value.split(":", 1)[0]
        return repr(value)

    def add_runs(self, label: str, runs: List[Tuple[int, object]]):
        self.lines[label] = " ".join(f"{n}:{self.token(v)}" for n, v in runs)

    def add_values(self, label: str, values: list):
        self.lines[label] = " ".join(self.token(v) for v in values)

    def text(self) -> str:
        head = ["# normkit.config's launch decisions, written by `python -m tests.test_config --write`; "
                "tests/test_config.py compares the code with them.",
                "# `#id fields`: a picked tile. `label | first_n:value ...`: runs over N (each to the next one's "
                "first N). `tile #id label | value ...`: per tile, in the label's order."]
        tiles = [f"#{i} {text}" for text, i in self.tiles.items()]
        return "\n".join(head + tiles + [f"{k} | {v}" for k, v in self.lines.items()]) + "\n"

    @classmethod
    def parse(cls, text: str) -> "Record":
        record = cls()
        for line in text.splitlines():
            if line.startswith("# ") or not line:
                continue
            if line.startswith("#"):
                ident, tile = line[1:].split(" ", 1)
                record.tiles[tile] = int(ident)
            else:
                label, tokens = line.split(" | ", 1)
                record.lines[label] = tokens
        return record

    def decoded(self) -> Dict[str, List[Tuple[int, str]]]:
        """{label: [(first N, value)] or [(position, value)] for a per-tile label (`… of TileConfig(…)`)},
        every tile id spelled out, so that two records compare whatever order their tiles were numbered in."""
        names = {f"#{i}": f"TileConfig({text})" for text, i in self.tiles.items()}
        spell = lambda token: names.get(token, token)  # noqa: E731
        out = {}
        for label, tokens in self.lines.items():
            if label.startswith("tile #"):
                ident, what = label[len("tile "):].split(" ", 1)
                out[f"{what} of {spell(ident)}"] = list(enumerate(map(spell, tokens.split())))
            else:
                out[label] = [(int(n), spell(v)) for n, v in (t.split(":", 1) for t in tokens.split())]
        return out


def build(tile_lines: Dict[str, list]) -> Record:
    record = Record()
    for label, runs in tile_lines.items():
        record.add_runs(label, runs)
    for label, runs in _function_lines().items():
        record.add_runs(label, runs)
    picked = {v: None for runs in tile_lines.values() for _, v in runs}
    for config in picked:
        ident = record.token(config)
        for what, values in _per_tile(config).items():
            record.add_values(f"tile {ident} {what}", values)
    return record


def _every_n_tile_lines() -> Dict[str, list]:
    """_tile_lines without the ranges: tile_config at every N (the walk's check; ~15 minutes)."""
    pick = _tile_config()
    lines = {}
    for label, kwargs in tile_scenarios():
        runs: List[Tuple[int, object]] = []
        for n in range(1, N_MAX + 1):
            value = pick(n, **kwargs)
            if not runs or runs[-1][1] != value:
                runs.append((n, value))
        lines[label] = runs
    return lines


# ---- the test ----

def differences(old: Record, new: Record) -> List[str]:
    """Each line that differs, in the record's order, by its first difference: (N or position, scenario,
    before, after)."""
    was, now = old.decoded(), new.decoded()
    problems = []
    for label in (label for label in was if label in now and was[label] != now[label]):
        before, after = dict(was[label]), dict(now[label])
        at = lambda pairs, key: pairs[max(k for k in pairs if k <= key)]  # noqa: E731  (a run lasts to the next)
        key = next(k for k in sorted(before.keys() | after.keys()) if at(before, k) != at(after, k))
        was_value, now_value = at(before, key), at(after, key)
        fields = [f"{a} → {b}" for a, b in zip(was_value.split(), now_value.split()) if a != b]
        where = f"position {key}" if " of TileConfig(" in label else f"N={key}"
        problems.append(f"{where}, {label}\n  before: {was_value}\n  after:  {now_value}"
                        + (f"\n  moved:  {', '.join(fields)}" if fields else ""))
    return problems + [f"{label}: {'no longer made' if label in was else 'not in the record'}"
                       for label in list(was) + list(now) if (label in was) != (label in now)]


def test_every_launch_decision_matches_the_record():
    with open(GOLDEN) as f:
        old = Record.parse(f.read())
    problems = differences(old, build(_tile_lines()))
    assert not problems, (f"{len(problems)} recorded launch decisions changed (the first: {problems[0]}); if "
                          "intended, regenerate with `python -m tests.test_config --write` and say why")


def test_the_range_walk_answers_as_single_calls():
    """The walk's ranges agree with calling at every N, on a scenario with splits and power-of-two edges."""
    pick = _tile_config()
    kwargs = dict(backward=True, interpret=False, heads=8, multiprocessors=132, residual=True, element_size=2)
    lo, hi = 7000, 140000
    runs = walk(lambda n: pick(n, **kwargs), lo, hi)
    bounds = [n for n, _ in runs[1:]] + [hi + 1]
    for (start, value), end in zip(runs, bounds):
        for n in range(start, end, 37):
            assert pick(n, **kwargs) == value, n
        assert pick(end - 1, **kwargs) == value, end - 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Write the record of normkit.config's launch decisions "
                                     "(tests/data/config_picks.txt) that tests/test_config.py compares the code with.")
    parser.add_argument("--write", action="store_true", help="write the record from the code as it is now")
    parser.add_argument("--every-n", action="store_true",
                        help="call tile_config at every N instead of walking ranges (~15 minutes; a check of the walk)")
    parser.add_argument("--out", default=GOLDEN, help=f"where to write (default {GOLDEN})")
    args = parser.parse_args(argv)
    if not args.write:
        parser.print_help()
        return 0
    record = build(_every_n_tile_lines() if args.every_n else _tile_lines())
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(record.text())
    print(f"wrote {args.out}: {len(record.tiles)} tiles, {len(record.lines)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
