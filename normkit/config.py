"""Launch heuristics: tile shape, warps and grid from N, the element size and the device.

Pure functions of their arguments (cached), so no device query or Python work that a cache can
hold runs on every call. Every constant has its reason beside it. Tests may pass a `TileConfig`
of their own to the launchers in `normkit.ops` to reach every code path on small shapes.
"""

import dataclasses
import functools
from dataclasses import dataclass



@dataclass(frozen=True)
class TileConfig:
    """How one program walks its rows: a BLOCK_M × BLOCK_N tile, whole row or column tiles."""

    block_m: int  # rows per tile
    block_n: int  # columns per tile (a power of two)
    one_tile: bool  # the whole row fits in one tile and stays in registers
    num_warps: int = 4
    programs_per_sm: int = 1  # backward only: persistent programs per multiprocessor
    num_stages: int = 3  # software-pipelining depth of the row loop (Triton's default)


# Widest row kept whole in registers. Forward: x and y only, 16384 fp32 values over 16 warps is
# 32 registers a thread. Backward: x, dy, w and the dweight partial are live at once, so half.
_MAX_ONE_TILE_FWD = 16384
_MAX_ONE_TILE_BWD = 8192
# Column tile for rows wider than that: 4096/2048 elements keep ≥ 16-byte vectors on every thread
# with 8 warps while the second pass over the row still finds it in L2.
_COLUMN_TILE_FWD = 4096
_COLUMN_TILE_BWD = 2048
# Elements per tile below which rows are stacked (BLOCK_M > 1): a program moving < ~8 KB spends
# its time in launch and reduction latency, not in memory traffic (QK-norm rows of 128).
_MIN_TILE_ELEMENTS = 4096
_MAX_BLOCK_M = 32  # more stacked rows only lengthens the per-row reductions' tails
# Interpreter (CPU): every program is a Python loop iteration of numpy ops on whole tiles, so the
# fewer and larger the programs, the faster; registers do not exist there.
_INTERPRET_TILE_ELEMENTS = 65536


def next_power_of_2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _num_warps(tile_elements: int) -> int:
    # ~16 elements a thread: enough independent 16-byte loads in flight, few enough registers.
    return max(1, min(16, tile_elements // 512))


@functools.lru_cache(maxsize=None)
def tile_config(n: int, backward: bool, interpret: bool) -> TileConfig:
    """Tile for rows of length `n` (forward or backward), on a GPU or in the interpreter."""
    whole = next_power_of_2(n)
    if interpret:
        block_n = min(whole, _INTERPRET_TILE_ELEMENTS)
        return TileConfig(block_m=max(1, _INTERPRET_TILE_ELEMENTS // block_n), block_n=block_n,
                          one_tile=block_n >= n)
    max_one_tile = _MAX_ONE_TILE_BWD if backward else _MAX_ONE_TILE_FWD
    if whole <= max_one_tile:
        block_m = max(1, min(_MAX_BLOCK_M, _MIN_TILE_ELEMENTS // whole))
        num_warps = _num_warps(block_m * whole)
        # 64 resident warps per SM on Hopper; keep half of them busy with persistent programs.
        return TileConfig(block_m, whole, True, num_warps, programs_per_sm=max(1, 32 // num_warps))
    block_n = _COLUMN_TILE_BWD if backward else _COLUMN_TILE_FWD
    num_warps = _num_warps(block_n)
    return TileConfig(1, block_n, False, num_warps, programs_per_sm=max(1, 32 // num_warps))


def fit_block_m(config: TileConfig, m: int) -> TileConfig:
    """Shrink BLOCK_M to the number of rows (a power of two) so tiny M wastes no lanes."""
    block_m = min(config.block_m, next_power_of_2(max(m, 1)))
    if block_m == config.block_m:
        return config
    return dataclasses.replace(config, block_m=block_m)


def backward_grid(config: TileConfig, m: int, multiprocessors: int) -> int:
    """Persistent programs for the backward: at most one per row block."""
    row_blocks = cdiv(m, config.block_m)
    return max(1, min(row_blocks, multiprocessors * config.programs_per_sm))


def finish_config(interpret: bool) -> TileConfig:
    """The dweight finisher's tile: block_m partial rows × block_n columns per step.

    GPU: 32 × 128 fp32 = 16 KB in flight per program, N/128 programs. Interpreter: one wide tile
    (each program is a Python loop iteration there).
    """
    if interpret:
        return TileConfig(block_m=8, block_n=8192, one_tile=False)
    return TileConfig(block_m=32, block_n=128, one_tile=False, num_warps=4)
