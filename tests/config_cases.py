"""Every launch configuration `normkit.config.tile_config` can pick, and a small problem that runs it.

Shared by tests/test_properties.py (runs each GPU configuration through the interpreter by passing
it to `ops.launch_fwd` / `ops.launch_bwd`), tools/config_coverage.py (prints the list) and
tools/sanitize_sweep.py (runs each one under compute-sanitizer on the GPU).

The configurations are found by asking the heuristic itself for every N in 1 … N_MAX (not by
reading its constants), so a change to the heuristics changes the list, and the tests follow. `walk` asks
about ranges of N at once (`IntRange`), so the enumeration takes seconds, not minutes.
"""

import dataclasses
import functools
import itertools
from typing import Callable, Dict, List, Tuple

from normkit import config as cfg

N_MAX = 262144  # widest row the GPU heuristics are enumerated over (README: "262144 and beyond")
INTERPRET_N_MAX = 70000  # widest row the interpreter tests run (one column tile past 65536)
H200_SMS = 132
# The backward's choice for wide rows depends on the device and the heads: rows split across
# resident programs when cdiv(N, part)·heads ≤ SMs, else column tiles (N > 16384) or a whole row
# (8192 < N ≤ 16384). Enumerated for an H200 with plain (N,) weights and with 8 and 64 per-head
# weights: together they reach every choice.
GPU_SCENARIOS = ((1, H200_SMS), (8, H200_SMS), (64, H200_SMS))
# The fused add (the backward's dresidual_out, the forward's residual) has tiles of its own at some
# widths: both enumerations ask for both.
RESIDUAL_SCENARIOS = (False, True)
# LayerNorm has tiles of its own at some widths, forward and backward: both enumerations ask for both.
LAYER_NORM_SCENARIOS = (False, True)
# Both directions take tiles of their own for 4-byte elements: both enumerations ask for both sizes.
ELEMENT_SIZE_SCENARIOS = (2, 4)
# The fused forwards hold some whole rows of 2-byte x beside a 4-byte residual (config/forward.py
# _reads_y_again): the forward's enumeration asks for the residual's size as x's (0) and 4.
RESIDUAL_ELEMENT_SIZE_SCENARIOS = (0, 4)
# The backward stages 2-byte rows only where they load as 16-byte vectors (vector_aligned): the
# others keep the prefetching tiles, so the 2-byte enumeration asks for both.
VECTOR_ALIGNED_SCENARIOS = (True, False)
# The recomputing backward (no saved statistics) stages 2-byte split parts of its own choice (config/backward.py
# STAGED_LAYER_NORM_RECOMPUTE) and prefetches the 4-byte ones the saved statistics' backward stages: the
# enumeration asks for it where it can differ (vector-aligned rows).
RECOMPUTE_SCENARIOS = (False, True)


class Undecided(BaseException):
    """A decision that differs across an IntRange: the walk halves the range. (BaseException, so the code
    under test cannot catch it by accident with `except Exception`.)"""


class IntRange:
    """Every integer lo … hi at once, standing in for an int argument. Arithmetic gives a range holding every
    possible result; a comparison answers only if it has one answer for every integer of the range, else it
    raises Undecided. Anything else (hashing, indexing, formatting, bit operations) raises Undecided too."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi

    def __repr__(self):
        return f"IntRange({self.lo}, {self.hi})"

    @staticmethod
    def _bounds(other) -> Tuple[int, int]:
        if isinstance(other, IntRange):
            return other.lo, other.hi
        if isinstance(other, int):
            return other, other
        raise Undecided(other)

    @staticmethod
    def of(values) -> "IntRange":
        return IntRange(min(values), max(values))

    def __add__(self, other):
        lo, hi = self._bounds(other)
        return IntRange(self.lo + lo, self.hi + hi)

    __radd__ = __add__

    def __neg__(self):
        return IntRange(-self.hi, -self.lo)

    def __sub__(self, other):
        return self + -IntRange(*self._bounds(other))

    def __rsub__(self, other):
        return -self + other

    def __mul__(self, other):
        lo, hi = self._bounds(other)
        return self.of([a * b for a in (self.lo, self.hi) for b in (lo, hi)])

    __rmul__ = __mul__

    def __floordiv__(self, other):  # monotone in the dividend for a fixed divisor
        if not isinstance(other, int) or other == 0:
            raise Undecided(other)
        return self.of([self.lo // other, self.hi // other])

    def __rfloordiv__(self, other):  # other // self: monotone in a divisor that keeps its sign
        if not isinstance(other, int) or self.lo <= 0 <= self.hi:
            raise Undecided(other)
        return self.of([other // self.lo, other // self.hi])

    def __mod__(self, other):
        if not isinstance(other, int) or other <= 0 or self.lo // other != self.hi // other:
            raise Undecided(other)
        return IntRange(self.lo % other, self.hi % other)

    def bit_length(self) -> int:
        ends = {abs(v).bit_length() for v in (self.lo, self.hi)}
        if len(ends) > 1 or self.lo < 0 < self.hi:
            raise Undecided("bit_length")
        return ends.pop()

    def _decide(self, always: bool, never: bool) -> bool:
        if always == never:
            raise Undecided("comparison")
        return always

    def __lt__(self, other):
        lo, hi = self._bounds(other)
        return self._decide(self.hi < lo, self.lo >= hi)

    def __le__(self, other):
        lo, hi = self._bounds(other)
        return self._decide(self.hi <= lo, self.lo > hi)

    def __gt__(self, other):
        lo, hi = self._bounds(other)
        return self._decide(self.lo > hi, self.hi <= lo)

    def __ge__(self, other):
        lo, hi = self._bounds(other)
        return self._decide(self.lo >= hi, self.hi < lo)

    def __eq__(self, other):
        lo, hi = self._bounds(other)
        return self._decide(self.lo == self.hi == lo == hi, self.hi < lo or self.lo > hi)

    def __ne__(self, other):
        return not self == other

    def __bool__(self):
        return self != 0

    def _undecided(self, *_):
        raise Undecided("operation")

    __hash__ = __index__ = __int__ = __float__ = __str__ = __format__ = __iter__ = __len__ = _undecided
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = __and__ = __rand__ = __or__ = __ror__ = _undecided
    __xor__ = __pow__ = __rpow__ = __truediv__ = __rtruediv__ = __abs__ = __round__ = __rmod__ = _undecided


def _plain(value) -> bool:
    """No IntRange inside: the value holds for every integer of the range it was computed for."""
    if dataclasses.is_dataclass(value):
        return all(_plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, (bool, int, type(None))) or isinstance(value, str) and "IntRange(" not in value


def decision(function: Callable[[int], object], n: int):
    """function(n), or "ValueError: …" where it refuses: a refusal is a decision too (backward_grid on a split
    that cannot fit)."""
    try:
        return function(n)
    except ValueError as error:
        return f"ValueError: {error}"


def walk(function: Callable[[int], object], lo: int, hi: int) -> List[Tuple[int, object]]:
    """function(n) for every n in lo … hi as runs [(first n, value), …], asking about ranges where it can:
    first each power-of-two bucket (2^k, 2^(k+1)], halved until a range answers with a plain value."""
    edges = sorted({lo, hi + 1} | {(1 << k) + 1 for k in range(hi.bit_length() + 1) if lo < (1 << k) + 1 <= hi})
    todo = [(a, b - 1) for a, b in zip(edges[:-1], edges[1:])][::-1]
    runs: List[Tuple[int, object]] = []
    while todo:
        a, b = todo.pop()
        if a == b:
            value = decision(function, a)
        else:
            try:
                value = function(IntRange(a, b))
            except (Undecided, Exception):  # whatever a range cannot answer, single N will
                value = IntRange
            if value is IntRange or not _plain(value):
                mid = (a + b) // 2
                todo += [(mid + 1, b), (a, mid)]
                continue
        if not runs or runs[-1][1] != value:
            runs.append((a, value))
    return runs


def _picker():
    """tile_config without its cache (keeps the library's lru_cache small)."""
    pick = getattr(cfg.tile_config, "__wrapped__", cfg.tile_config)
    return lambda n, backward, interpret, heads, sms, residual, layer_norm=False, element_size=2, aligned=True, \
        recompute=False, residual_size=0: pick(n, backward, interpret, heads=heads, multiprocessors=sms,
                                               residual=residual, layer_norm=layer_norm, element_size=element_size,
                                               vector_aligned=aligned, recompute=recompute,
                                               residual_element_size=residual_size)


def heuristic_configs(backward: bool, interpret: bool = False, n_max: int = N_MAX
                      ) -> Dict[cfg.TileConfig, Tuple[int, int]]:
    """{config: (smallest N, largest N)} over every N in 1 … n_max that `tile_config` maps to it
    (GPU: in any of GPU_SCENARIOS). Calls the undecorated function, so the library's own
    lru_cache is not filled with millions of entries."""
    return _heuristic_configs(bool(backward), bool(interpret), int(n_max))


@functools.lru_cache(maxsize=None)
def _heuristic_configs(backward: bool, interpret: bool, n_max: int) -> Dict[cfg.TileConfig, Tuple[int, int]]:
    found: Dict[cfg.TileConfig, Tuple[int, int]] = {}
    # the forward splits only the fused add's rows of one head: one head and eight reach its choices
    scenarios = ((1, 0),) if interpret else GPU_SCENARIOS if backward else GPU_SCENARIOS[:2]
    pick = _picker()
    # (residual, layer_norm, element size, vector aligned, recompute, residual size): the backward's fused-add,
    # LayerNorm and 4-byte tiles, its unstaged 2-byte ones and the recomputing backward's staged ones, the
    # forward's fused-add and LayerNorm tiles (4-byte ones included; 2-byte x beside a 4-byte residual too)
    variants = ((False, False, 2, True, False, 0),) if interpret else (
        tuple((*v, 0) for v in itertools.product(RESIDUAL_SCENARIOS, LAYER_NORM_SCENARIOS, ELEMENT_SIZE_SCENARIOS,
                                                 VECTOR_ALIGNED_SCENARIOS, RECOMPUTE_SCENARIOS)
              if (v[2] == 2 or v[3]) and (v[3] or not v[4])) if backward
        else tuple((residual, ln, size, True, False, res_size) for residual in RESIDUAL_SCENARIOS
                   for ln in LAYER_NORM_SCENARIOS for size in ELEMENT_SIZE_SCENARIOS
                   for res_size in RESIDUAL_ELEMENT_SIZE_SCENARIOS if not res_size or (residual and size == 2)))
    for heads, sms in scenarios:
        for args in variants:
            runs = walk(lambda n: pick(n, backward, interpret, heads, sms, *args), 1, n_max)
            for (first, config), (after, _) in zip(runs, runs[1:] + [(n_max + 1, None)]):
                lo, hi = found.get(config, (first, after - 1))
                found[config] = (min(lo, first), max(hi, after - 1))
    return found


# A device's enumeration (`device_picks`): the scenarios that reach every choice of the sm_90 tables and of the
# generic ladder — both directions, RMSNorm and LayerNorm, fused or not, 2-, 4- and 8-byte x, y and the residual of
# every width, unaligned 2-byte rows, recomputed statistics, and 1, 8 and 64 weight heads.
DEVICE_HEADS = (1, 8, 64)


def device_scenarios(backward: bool):
    """tile_config's keyword arguments (but n and device) for every scenario of `device_picks`."""
    for residual, ln, size in itertools.product(RESIDUAL_SCENARIOS, LAYER_NORM_SCENARIOS, (2, 4, 8)):
        common = dict(backward=backward, interpret=False, residual=residual, layer_norm=ln, element_size=size)
        if not backward:  # y and (fused) the residual as x (0) or of each other width, as tests/test_config.py
            others = (0,) + tuple(s for s in (2, 4, 8) if s != size)
            for out_size, residual_size in itertools.product(others, others if residual else (0,)):
                yield dict(common, heads=1, out_element_size=out_size, residual_element_size=residual_size)
            continue
        for heads, aligned, recompute in itertools.product(DEVICE_HEADS, VECTOR_ALIGNED_SCENARIOS, RECOMPUTE_SCENARIOS):
            if aligned or size == 2:
                yield dict(common, heads=heads, vector_aligned=aligned, recompute=recompute)


def device_picks(device: cfg.Device, backward: bool, n_max: int = N_MAX) -> List[Tuple[cfg.TileConfig, dict, int, int]]:
    """[(config, scenario, smallest N, largest N)]: every tile `tile_config` picks for the device, with each
    scenario (`device_scenarios`) that picks it and the widths that do."""
    pick = getattr(cfg.tile_config, "__wrapped__", cfg.tile_config)
    found: Dict[Tuple[cfg.TileConfig, tuple], Tuple[int, int]] = {}
    for scenario in device_scenarios(backward):
        runs = walk(lambda n: pick(n, device=device, **scenario), 1, n_max)
        for (first, config), (after, _) in zip(runs, runs[1:] + [(n_max + 1, None)]):
            key = (config, tuple(sorted(scenario.items())))
            lo, hi = found.get(key, (first, after - 1))
            found[key] = (min(lo, first), max(hi, after - 1))
    return [(config, dict(scenario), lo, hi) for (config, scenario), (lo, hi) in found.items()]


def describe(config: cfg.TileConfig) -> str:
    mode = ("split_rows" if getattr(config, "split", False) else "one_tile") if config.one_tile else "column_tiles"
    return (f"BLOCK_M={config.block_m} BLOCK_N={config.block_n} {mode} warps={config.num_warps} "
            f"stages={config.num_stages} programs/SM={config.programs_per_sm}"
            + (" prefetch" if getattr(config, "prefetch", False) else "")
            + (" joined" if getattr(config, "joined_sums", False) else "")
            + (f" async{config.async_stages}" if getattr(config, "async_stages", 0) else "")
            + (" reload" if getattr(config, "reload", False) else "")
            + (f" maxnreg={config.max_registers}" if getattr(config, "max_registers", 0) else "")
            + (f" column_stages={config.column_stages}" if getattr(config, "column_stages", 0) else "")
            + (" centered" if getattr(config, "centered_pass", False) else ""))


def runs_family(config: cfg.TileConfig, family: str) -> bool:
    """Whether `family` (rms, fused_add, layer_norm, fused_layer_norm) can run `config`: LayerNorm's
    centered-pass column tiles compute a centred variance, which RMSNorm has none of (the launcher
    refuses)."""
    return family in ("layer_norm", "fused_layer_norm") or not getattr(config, "centered_pass", False)


@dataclasses.dataclass(frozen=True)
class ConfigProblem:
    """One run of a configuration: an (M, N) problem that keeps its tiling meaningful."""

    config: cfg.TileConfig
    backward: bool
    m: int
    n: int
    multiprocessors: int  # the persistent backward grid is programs_per_sm × this (split: the device's)

    @property
    def split(self) -> bool:
        return bool(getattr(self.config, "split", False))

    def label(self) -> str:
        kind = "bwd" if self.backward else "fwd"
        mode = "split" if self.split else ("one" if self.config.one_tile else "col")
        mode += "pf" if getattr(self.config, "prefetch", False) else ""
        mode += "j" if getattr(self.config, "joined_sums", False) else ""
        mode += f"s{self.config.async_stages}" if getattr(self.config, "async_stages", 0) else ""
        mode += "r" if getattr(self.config, "reload", False) else ""
        mode += f"c{self.config.max_registers}" if getattr(self.config, "max_registers", 0) else ""
        mode += f"cs{self.config.column_stages}" if getattr(self.config, "column_stages", 0) else ""
        mode += "two" if getattr(self.config, "centered_pass", False) else ""
        return f"{kind}-m{self.config.block_m}n{self.config.block_n}{mode}" \
               f"-w{self.config.num_warps}p{self.config.programs_per_sm}-{self.m}x{self.n}"


def _split_parts(config: cfg.TileConfig, n: int) -> int:
    return -(-n // config.block_n) if getattr(config, "split", False) else 1


def _rows(config: cfg.TileConfig, backward: bool, multiprocessors: int, n: int) -> int:
    """Enough rows for a masked tail row block and, in the backward, persistent programs that own
    two or more row blocks (grid = programs_per_sm × multiprocessors, split: ÷ parts)."""
    if backward:
        programs = max(1, config.programs_per_sm * multiprocessors // _split_parts(config, n))
        return config.block_m * 2 * programs + 1
    return 2 * config.block_m + 1


def _widths(config: cfg.TileConfig, n_lo: int, n_hi: int) -> List[int]:
    """The row lengths a configuration is run on.

    Whole-row tiles: the narrowest and the widest N that pick it (BLOCK_N/2 < N ≤ BLOCK_N: a masked
    tail of columns, and a full tile). Column tiles: shrunk to two or three tiles a row (each
    column tile is a Python loop iteration in the interpreter), keeping what matters — N > BLOCK_N,
    a last tile holding one element, and one about half full. Split rows: the narrowest N
    (three parts, the last holding one element) and three and a half parts."""
    if getattr(config, "split", False):
        return [n_lo, 3 * config.block_n + config.block_n // 2]
    if config.one_tile:
        return sorted({n_lo, n_hi})
    return [2 * config.block_n + 1, config.block_n + config.block_n // 2 + 1]


def config_problems(backward: bool, *, multiprocessors: int = 1, interpret: bool = False,
                    n_max: int = N_MAX) -> List[ConfigProblem]:
    """For each configuration the heuristics can pick, the problems that run it: both widths,
    rows enough for several row blocks per program (multiprocessors: the SM count assumed by
    the backward grid; tests monkeypatch `launchers.multiprocessor_count` to it; split configurations
    keep the H200's 132, every part of a row needing a resident program)."""
    problems = []
    for config, (n_lo, n_hi) in heuristic_configs(backward, interpret, n_max).items():
        sms = H200_SMS if getattr(config, "split", False) else multiprocessors
        for n in _widths(config, n_lo, n_hi):
            problems.append(ConfigProblem(config, backward, _rows(config, backward, sms, n), n, sms))
    return problems


def coverage_lines(interpret: bool = False) -> List[str]:
    """Human-readable list: each configuration with the N range that picks it."""
    lines = []
    for backward in (False, True):
        configs = heuristic_configs(backward, interpret, INTERPRET_N_MAX if interpret else N_MAX)
        gpu = ("GPU, H200 (132 SMs), heads 1 and 8, with and without a residual, 2- and 4-byte elements" if backward
               else "GPU, RMSNorm, the fused add and LayerNorm, 2- and 4-byte elements, 2-byte x beside a 4-byte "
                    "residual")
        where = "interpreter" if interpret else gpu
        lines.append(f"{'backward' if backward else 'forward'} ({where} heuristics): {len(configs)} configurations")
        for config, (lo, hi) in sorted(configs.items(), key=lambda item: item[1]):
            lines.append(f"  N {lo:>6} … {hi:<6}  {describe(config)}")
    return lines
