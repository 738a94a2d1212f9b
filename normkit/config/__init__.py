"""Launch heuristics: tile shape, warps and grid from N, the element size and the device.

Pure functions of their arguments (cached), so no device query or Python work that a cache can
hold runs on every call. Every constant has its reason beside it. Tests may pass a `TileConfig`
of their own to the launchers in `normkit.ops` to reach every code path on small shapes.

    tile.py      TileConfig (how one program walks its rows), next_power_of_2, cdiv
    forward.py   the forward's measured tables and its pick, forward_tile
    backward.py  the backward's measured tables and its pick, backward_tile
    grid.py      rows a tile at small M, the persistent grid, residency, the dweight finisher's tile
"""

import functools

from .backward import _MAX_ONE_TILE_BWD, backward_tile, even_cols, joins_stats, may_stage
from .forward import _MAX_ONE_TILE_FWD, forward_tile
from .grid import backward_grid, finish_config, fit_block_m, resident_programs, split_parts
from .tile import TileConfig, cdiv, check_covers, holds_pairs, next_power_of_2, takes_pairs

__all__ = ["TileConfig", "backward_grid", "cdiv", "check_covers", "even_cols", "finish_config", "fit_block_m", "holds_pairs", "joins_stats", "may_stage", "next_power_of_2",
           "resident_programs", "split_parts", "takes_pairs", "tile_config", "_MAX_ONE_TILE_BWD", "_MAX_ONE_TILE_FWD"]

# Interpreter (CPU): every program is a Python loop iteration of numpy ops on whole tiles, so the
# fewer and larger the programs, the faster; registers do not exist there.
_INTERPRET_TILE_ELEMENTS = 65536


@functools.lru_cache(maxsize=None)
def tile_config(n: int, backward: bool, interpret: bool, heads: int = 1, multiprocessors: int = 0,
                residual: bool = False, layer_norm: bool = False, element_size: int = 2,
                vector_aligned: bool = True, out_element_size: int = 0, recompute: bool = False,
                residual_element_size: int = 0) -> TileConfig:
    """Tile for rows of length `n` (forward or backward), on a GPU or in the interpreter.

    heads and multiprocessors matter only for split rows (wide rows on a GPU: the backward's, and
    the fused add's forward): every part of every head needs a resident program, so a split needs
    parts·heads ≤ multiprocessors (the forward splits only rows of one head).
    residual: the backward also reads dresidual_out, the forward a residual (fused add), which
    moves the best tile.
    layer_norm: LayerNorm's forward (two dependent reductions: the mean, then the centred
    variance) takes tiles of its own; its backward shares RMSNorm's (since session 11: the
    staged tiles won both) except for short 2-byte rows (_BWD_ASYNC_LAYER_NORM).
    element_size: bytes per element of x; the backward's 2-byte rows of 128, 256 and 1024 … 8192
    stage their loads in shared memory (_staged_tile), the others prefetch or load plainly;
    4-byte rows join their row sums on more tiles (_JOIN_SUMS_WIDE_ELEMENTS) and take tiles of
    their own at some widths (_BWD_PLAIN_4_BYTE), as does LayerNorm's forward
    (_FWD_LAYER_NORM_4_BYTE).
    The forward's whole rows of ≥ 4096 are re-read for y (reload, _FWD_RELOAD_MIN), plain 2-byte
    RMSNorm rows of ≥ 16384 with a 2-byte y under a register cap (max_registers, _FWD_RELOAD_CAP). LayerNorm's bf16
    rows of 32768 (65536 where they do not split) without a residual: column tiles read three times
    (_FWD_LAYER_NORM_CENTERED; with a 4-byte y its rows of 32768 stay whole, _FWD_LAYER_NORM_WHOLE_4_BYTE_Y);
    RMSNorm's fp32 x with a 2-byte y holds its rows of 32768, not re-read (_FWD_HELD_RMS_4_TO_2).
    Rows wider than 32768: LayerNorm's forward on staged 16 KB column tiles (_FWD_LAYER_NORM_COLUMNS),
    RMSNorm's on 16384-column tiles — its plain 2-byte rows of 65536 whole, re-read for y, one program
    an SM (_FWD_WHOLE_RELOAD_RMS_2_BYTE); the fused add's rows of more than 64 KB (fp32 32768 too) and
    the fused LayerNorm's wider than 32768 split across programs (_FWD_SPLIT_MIN_BYTES) in parts of
    4 KB of the wider of x and the residual, staging their loads and holding the previous row block
    (_FWD_SPLIT_RESIDUAL_STAGED; 8-byte rows in 8 KB parts re-reading it, _FWD_SPLIT_RESIDUAL),
    RMSNorm's rows of 128 KB and more in parts of 16 KB of the wider of x and y, four an SM
    (_FWD_SPLIT_RMS; its 2-byte parts hold their weight, _FWD_SPLIT_HOLD_WEIGHT), LayerNorm's rows without a residual — bf16 x and fp32 x of 65536-262144 — in
    16 KB parts of x on 4 warps under a 128-register
    cap, four an SM (_FWD_SPLIT_LAYER_NORM; fp32 x's parts hold their weight and bias, _FWD_SPLIT_HOLD_WEIGHT);
    the backward's split parts hold 4-16 KB of a row: vector-aligned rows but 8-byte ones (recomputing the
    statistics too, but LayerNorm's fp32 rows of 262144), 4-16 KB parts staging their loads in shared memory
    (_STAGED, _staged_split, _STAGED_LAYER_NORM_RECOMPUTE, _STAGED_4_BYTE_LAYER_NORM_RECOMPUTE); otherwise
    prefetching parts (_PAIRED_SPLIT: 2-byte rows on two programs an SM, _PAIRED_SPLIT_4_BYTE: 4-byte rows
    on three, re-reading the previous row block after the exchange instead of holding it (reload), or
    _PAIRED_SPLIT_4_BYTE_HELD on two, holding it, up to _PAIRED_SPLIT_4_BYTE_HELD_MAX; _NARROW_SPLIT,
    _SPLIT_PART, _SPLIT_WIDE_ELEMENTS).
    out_element_size: bytes per element of the forward's y (0: as x's). RMSNorm's whole rows of
    65536 and its register cap want a 2-byte y (a 4-byte one spills them:
    _FWD_WHOLE_RELOAD_RMS_2_BYTE, _FWD_RELOAD_CAP); its split parts are sized by y's bytes where y is
    the wider (_FWD_SPLIT_RMS), and its 2-byte rows of 32768 with a 4-byte y walk 16384-column tiles
    (_FWD_COLUMNS_RMS_4_BYTE_Y).
    residual_element_size: bytes per element of the forward's residual (the wider of the residual
    and residual_out; 0: as x's): sizes the fused forward's split parts; a 4-byte residual beside 2-byte x
    holds the fused forwards' whole rows of 8192 and 32768 (not re-read, _FWD_HELD_4_BYTE_RESIDUAL) and
    puts the fused LayerNorm's rows of 16384 / 32768 on fewer warps (_FWD_LAYER_NORM_4_BYTE_RESIDUAL_WARPS).
    vector_aligned: the backward's rows load as 16-byte vectors (N and every row stride multiples
    of 16 elements, unit column strides, 16-byte aligned pointers: what a launch specialises).
    Staging needs it — cp.async copies 4-16 bytes, so Triton's pipeliner leaves scalar 2-byte
    loads as written (ptxas, LayerNorm 2 × 2048 with N and strides not multiples of 16: 80 scalar
    loads, no cp.async of x or dy) — so rows that are not keep the prefetching tile.
    recompute: the backward recomputes the statistics (no saved mean / rstd); its split parts stage,
    with tiles of their own for LayerNorm's (_staged_split; runs ZZZZZW-ZZZZZZ, sessions 35-36).
    """
    whole = next_power_of_2(n)
    if interpret:
        block_n = min(whole, _INTERPRET_TILE_ELEMENTS)
        return TileConfig(block_m=max(1, _INTERPRET_TILE_ELEMENTS // block_n), block_n=block_n,
                          one_tile=block_n >= n)
    if backward:
        return backward_tile(n, whole, heads, multiprocessors, residual, layer_norm, element_size, vector_aligned,
                             recompute)
    return forward_tile(n, whole, heads, multiprocessors, residual, layer_norm, element_size,
                        out_element_size or element_size, residual_element_size or element_size)
