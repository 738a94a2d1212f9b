"""The grid around a tile: rows a tile at small M, the backward's persistent programs, how many
programs of a compiled kernel an SM holds, and the dweight finisher's tile."""

import dataclasses
import functools
from typing import Optional

from .tile import TileConfig, cdiv, next_power_of_2


def fit_block_m(config: TileConfig, m: int) -> TileConfig:
    """Shrink BLOCK_M to the number of rows (a power of two) so tiny M wastes no lanes. M ≥ BLOCK_M is
    asked first: for a symbolic M (torch.compile) the one guard every large M shares."""
    if m >= config.block_m:
        return config
    block_m = min(config.block_m, next_power_of_2(max(m, 1)))
    if block_m == config.block_m:
        return config
    return _with_block_m(config, block_m)


@functools.lru_cache(maxsize=1024)
def _with_block_m(config: TileConfig, block_m: int) -> TileConfig:
    # dataclasses.replace costs ~3 µs a call here (it re-runs __init__ and __post_init__); the
    # variety is small (configs × powers of two below their BLOCK_M), so it is computed once.
    return dataclasses.replace(config, block_m=block_m)


def split_parts(config: TileConfig, n: int) -> int:
    """Programs that share one row: cdiv(n, block_n) for a split config, else 1."""
    return cdiv(n, config.block_n) if config.split else 1


def backward_grid(config: TileConfig, m: int, multiprocessors: int, n: int = 0, heads: int = 1,
                  resident: Optional[int] = None) -> int:
    """Persistent programs for the backward, at most one per row block. For a split config: groups
    of split_parts programs, few enough that all groups·parts·heads programs are resident at once.

    resident: how many programs of the compiled kernel fit on a multiprocessor (`resident_programs`); None:
    as many as the config asks. The rows are dealt to the programs in a fixed cycle, so a program that is not
    resident starts only when another has finished all its rows: asking for more than fit runs the kernel in
    two waves (H200, LayerNorm fp32 16384×4096 on 1 × 4096 tiles, 2 asked and 1 fitting: 197 → 211.8 µs)."""
    row_blocks = cdiv(m, config.block_m)
    per_sm = config.programs_per_sm if resident is None else max(1, min(config.programs_per_sm, resident))
    slots = multiprocessors * per_sm
    if config.split:
        slots //= split_parts(config, n) * heads
        if slots < 1:
            raise ValueError(f"split config needs {split_parts(config, n) * heads} resident programs "
                             f"(parts × heads), the device runs {multiprocessors * config.programs_per_sm}")
    return max(1, min(row_blocks, slots))


def resident_programs(registers: int, num_warps: int, shared_bytes: int, sm_registers: int = 65536,
                      sm_threads: int = 2048, sm_shared_bytes: int = 233472, max_programs: int = 32) -> int:
    """Programs of a compiled kernel one multiprocessor holds at once (CUDA's occupancy rules for
    sm_80 / sm_90): registers are allocated per warp in units of 256 (a thread's count rounded up
    to a multiple of 8), each program takes num_warps·32 thread slots and its shared memory plus
    1 KiB the driver reserves, and an SM runs at most 32 programs::

        min(⌊R / (⌈32·regs / 256⌉·256·warps)⌋, ⌊T / (32·warps)⌋, ⌊S / (shared + 1024)⌋, 32)
    """
    per_warp = cdiv(registers * 32, 256) * 256
    by_registers = sm_registers // (per_warp * num_warps) if per_warp else max_programs
    by_threads = sm_threads // (32 * num_warps)
    by_shared = sm_shared_bytes // (shared_bytes + 1024)
    return max(0, min(by_registers, by_threads, by_shared, max_programs))


# The dweight finisher sums G partial rows (4-528 on an H200, just written, in L2): it is latency-bound, one L2
# round trip a step, so every row goes in one step (docs/design.md#finisher).
# G > 128: 16-column strips, N/16 programs (H200 G = 264: 6.3 → 1.9 µs against 32 × 128 tiles in 9 steps)
_FINISH_COLUMNS = 16
# Fewer rows: strips widened while a program holds ≤ 4096 values on 2 warps and a gradient keeps ≥ 256 programs
# (H200 G = 8 at N = 131072: 5.95 → 2.02 µs, with dbias 10.96 → 2.39; G = 16 at 65536: 3.55 → 1.97)
_FINISH_VALUES = 4096
_FINISH_PROGRAMS = 256
_FINISH_MAX_ROWS = 512  # 512 × 16 fp32 = 64 values a thread on 4 warps; more rows take more steps


@functools.lru_cache(maxsize=None)
def finish_config(interpret: bool, rows: int, n: int) -> TileConfig:
    """The dweight finisher's tile for `rows` (= G) partial rows of `n` columns: block_m partial rows
    × block_n columns per step. GPU: every row in one step where G ≤ 512, on 16-column strips,
    doubled while a program holds at most _FINISH_VALUES values and the row still makes
    _FINISH_PROGRAMS strips; 16-column strips on up to 4 warps (32 values a thread), wider ones on
    2. Interpreter: one wide tile (each program is a Python loop iteration there)."""
    if interpret:
        return TileConfig(block_m=8, block_n=8192, one_tile=False)
    block_g = min(_FINISH_MAX_ROWS, next_power_of_2(rows))
    block_n = _FINISH_COLUMNS
    while 2 * block_n * block_g <= _FINISH_VALUES and 2 * block_n * _FINISH_PROGRAMS <= n:
        block_n *= 2
    warps = max(1, min(4, block_g * block_n // 1024)) if block_n == _FINISH_COLUMNS else 2
    return TileConfig(block_m=block_g, block_n=block_n, one_tile=False, num_warps=warps)
