"""The generic ladder: tiles for any GPU but the H200's sm_90, derived from the `Device` record
(docs/design.md#heuristics). Nothing here was tuned on the GPUs it serves; it takes the shapes of the H200's
tables that need no particular device, and keeps to what every target allows:

- no staged loads (cp.async / LDS pipelines), so shared memory holds only reductions' scratch;
- at most threads_per_block threads a program, warps counted in the device's warp size (64 on AMD);
- no register caps (a cap is taken only where a sweep measured it), no weight held across split row blocks (its
  upcast is held in float32 without PTX's register pairs);
- split rows, both directions, only on NVIDIA GPUs (whose residency rules the launcher applies to the compiled
  kernel) and only where every part of every head gets a multiprocessor of its own; elsewhere whole rows or
  column tiles. AMD's split rows stay off: the exchange's spin wait has no proof there (the interpreter runs
  programs one after another, so it cannot run split rows at all), its residency rule is unmeasured, and Triton
  3.6 cannot compile the backward's parts of two rows for gfx942 / gfx950 (no 64-bit buffer atomic exchange).
"""

from dataclasses import replace
from typing import Optional

from . import backward as tuned_backward
from . import forward as tuned_forward
from .device import Device, shared_bytes
from .shapes import Columns, Problem, Split, Whole
from .tile import TileConfig, cdiv

# Forward: whole rows up to 16384 values (16-32 a thread on 16 warps), x read again for y from 4096
FORWARD_WHOLE_MAX = 16384
RELOAD_MIN = 4096
VALUES_A_THREAD = 16  # whole rows' and column tiles' values a thread (the H200's whole-row rule: 4096 on 8 warps)
WHOLE_TILE_ELEMENTS, WHOLE_MAX_BLOCK_M, WHOLE_MAX_WARPS = 4096, 64, 16
# ... wider rows whole while they hold ≤ 64 KB of their widest stream, ≤ 32 values a thread on up to
# threads_per_block threads (the H200's WHOLE_ROW_MAX, 32768 on 32 warps; sm80/sm89/sm100 compile 2-byte rows of
# 32768 to 38-64 registers and gfx942/gfx950 to 52-90, spilling 8 B at most (the fused LayerNorm on sm89); the
# fused add's fp32 ones spilled 96-104 B)
WIDE_WHOLE_BYTES, WIDE_WHOLE_VALUES_A_THREAD = 65536, 32
# RMSNorm's 2-byte x and y, rows of 65536: the whole row on 1024 threads read again for y, one program an SM,
# where those rows fit half the L2 (the H200's RMS_WHOLE_65536: 4096×65536 in 256 µs, these column tiles 342 on
# the portable path; 57-64 registers on sm80/sm90/sm100, 8 B spilled on sm89)
WHOLE_65536_VALUES_A_THREAD = 64
# Backward: whole rows up to 16 KB (8192 2-byte values), the next row block loaded ahead in registers: the H200's
# PREFETCH_WHOLE tile of the 2-byte row as wide in bytes (a 4096-value fp32 row takes the 8192 one's warps)
BACKWARD_WHOLE_MAX_BYTES = 16384
# Shorter rows: 16 KB of x a tile (up to 64 rows) on 4 warps, two an SM (the H200's 8192 2-byte values)
SHORT_TILE_BYTES, SHORT_MAX_BLOCK_M = 16384, 64
# Wider rows that do not split: two passes over 2 × 4096 tiles on 16 warps (the H200's COLUMNS)
BACKWARD_COLUMNS = Columns(block_m=2, block_n=4096, warps=16, per_sm=2)
# Split parts hold 16 KB of x an SM, as every prefetching part the H200's sweeps kept (RMS_PARTS, LAYER_NORM_PARTS,
# CAPPED_PARTS, FP32_PARTS_HELD), in parts that compile without register caps:
# 2-byte x: 2 × 4 KB on 4 warps, two an SM — LayerNorm's LAYER_NORM_PARTS, RMSNorm's too (its RMS_PARTS, 1 × 8 KB,
# takes 255 registers and spills 36 B on sm_90; these 212-255 on sm80-sm100, LayerNorm's spilling 24 B at most)
SPLIT_PARTS_2_BYTE = (tuned_backward.LAYER_NORM_PARTS, tuned_backward.FEWER_PARTS, tuned_backward.FEWEST_PARTS)
# 4-byte x: 1 × 4 KB on 4 warps, four an SM asked — STAGED_FP32's part without its staging (104-143 registers, 3-4
# resident, where FP32_PARTS_HELD's 1 × 8 KB takes 205-239 and leaves two)
FP32_PARTS = Split(block_m=1, part_bytes=4096, warps=4, per_sm=4, prefetch=True)
# Shared memory a program by `shared_bytes`' bound, at most: what every CUDA GPU gives without opting in, and
# CDNA3's 64 KB of LDS — not the device's whole allowance, whose last kilobytes cost resident programs
SHARED_BUDGET = {"nvidia": 48 << 10, "amd": 64 << 10}


def generic_tile(p: Problem, device: Device, backward: bool) -> TileConfig:
    """The generic ladder's tile for the problem on the device (see the module's docstring)."""
    return fit(_backward(p, device) if backward else _forward(p, device), p, device, backward)


def fit(tile: TileConfig, p: Problem, device: Device, backward: bool) -> TileConfig:
    """The tile within the device's limits: at most threads_per_block threads, and while its shared memory
    (`shared_bytes`, an upper bound) exceeds shared_per_block or SHARED_BUDGET, half the rows a tile, then (down to
    4) half the warps; a ValueError naming the device where that does not fit either."""
    if tile.num_warps > device.max_warps:
        tile = replace(tile, num_warps=device.max_warps)
    budget = min(device.shared_per_block, SHARED_BUDGET[device.vendor])
    while (need := shared_bytes(tile, p, backward, device.warp_size)) > budget:
        if tile.block_m > 1:
            tile = replace(tile, block_m=tile.block_m // 2)
        elif tile.num_warps > 4:
            tile = replace(tile, num_warps=tile.num_warps // 2)
        else:
            raise ValueError(f"normkit has no tile for rows of {p.n} on {device.arch}: the narrowest needs {need} "
                             f"bytes of shared memory a program, the device offers {device.shared_per_block} "
                             f"({'backward' if backward else 'forward'}, {p.x_bytes}-byte x)")
    return tile


def _forward(p: Problem, device: Device) -> TileConfig:
    whole = p.whole
    if whole <= FORWARD_WHOLE_MAX:
        block_m = max(1, min(WHOLE_MAX_BLOCK_M, WHOLE_TILE_ELEMENTS // whole))
        warps = max(1, min(WHOLE_MAX_WARPS, block_m * whole // (VALUES_A_THREAD * device.warp_size)))
        return TileConfig(block_m, whole, True, warps, reload=whole >= RELOAD_MIN)
    if _whole_wide(p, device):
        return TileConfig(1, whole, True, device.max_warps, reload=True)
    split = _forward_split(p, device)
    if split is not None:
        return split
    warps = min(WHOLE_MAX_WARPS, device.max_warps)
    return Columns(block_m=1, block_n=VALUES_A_THREAD * device.warp_size * warps, warps=warps).tile()


def _whole_wide(p: Problem, device: Device) -> bool:
    """Whether a row wider than FORWARD_WHOLE_MAX stays whole on threads_per_block threads: up to WIDE_WHOLE_BYTES
    of its widest stream, or (RMSNorm's 2-byte x and y) 65536 values where a row an SM fits half the L2."""
    threads, widest = device.threads_per_block, max(p.x_bytes, p.y_bytes, p.residual_bytes if p.residual else 0)
    if p.whole * widest <= WIDE_WHOLE_BYTES:
        return p.whole <= WIDE_WHOLE_VALUES_A_THREAD * threads
    plain_2_byte = not (p.residual or p.layer_norm) and p.x_bytes == p.y_bytes == 2
    return (plain_2_byte and p.whole == 65536 and p.whole <= WHOLE_65536_VALUES_A_THREAD * threads
            and 2 * device.multiprocessors * p.whole * p.x_bytes <= device.l2_bytes)


def _forward_split(p: Problem, device: Device) -> Optional[TileConfig]:
    """The H200's split forward (its rows without a residual from 65536 columns, the fused forwards' rows of more
    than 64 KB; config/forward.py) without register caps, staging or held weights, on NVIDIA GPUs only."""
    if device.vendor != "nvidia" or p.heads != 1:
        return None
    f = tuned_forward
    plain_rms = not (p.residual or p.layer_norm)
    if p.residual:
        wide = p.whole > f.WHOLE_ROW_MAX if p.layer_norm else p.whole * p.x_bytes > f.FUSED_SPLIT_MIN_BYTES
        split, column_bytes = (f.FUSED_SPLIT if wide else None), p.x_bytes
    else:  # RMSNorm's parts are sized by the wider of x and y, LayerNorm's by x
        split, column_bytes = f._plain_split(p), max(p.x_bytes, p.y_bytes) if plain_rms else p.x_bytes
    if split is None:
        return None
    tile = replace(split, max_registers=0, stages=0, hold_weight=False).tile(column_bytes)
    return tile if p.fits(tile) else None


def _backward(p: Problem, device: Device) -> TileConfig:
    whole, row_bytes = p.whole, p.whole * p.x_bytes
    if row_bytes <= BACKWARD_WHOLE_MAX_BYTES:
        as_wide = tuned_backward.PREFETCH_WHOLE.get(row_bytes // 2)
        if as_wide is not None:
            return as_wide.tile(whole)
        return Whole(block_m=max(1, min(SHORT_MAX_BLOCK_M, SHORT_TILE_BYTES // row_bytes)), warps=4,
                     per_sm=2).tile(whole)
    split = _split(p, device)
    return split if split is not None else BACKWARD_COLUMNS.tile()


def _split(p: Problem, device: Device) -> Optional[TileConfig]:
    """The first prefetching split whose parts (of every head) each get a multiprocessor, on NVIDIA GPUs."""
    if device.vendor != "nvidia":
        return None
    for split in _split_candidates(p):
        tile = split.tile(p.x_bytes)
        if tile.num_warps <= device.max_warps and p.fits(tile):
            return tile
    return None


def _split_candidates(p: Problem) -> tuple:
    """The prefetching parts, best first: the narrowest (most parts) first, wider ones where those are too many."""
    b = tuned_backward
    if p.x_bytes > 4:
        return (b.FP64_PARTS,)
    if p.x_bytes == 4:
        return (FP32_PARTS, b.FP32_PARTS_REREAD if p.residual else b.FP32_PARTS_HELD, b.FP64_PARTS)
    return SPLIT_PARTS_2_BYTE


def fits_device(tile: TileConfig, p: Problem, device: Device, backward: bool) -> bool:
    """Whether a tile keeps within the device's threads and shared memory a program (`shared_bytes`), and splits
    rows or caps registers (ptxas' maxnreg) only on an NVIDIA GPU — split, where every part of every head gets an
    SM of its own."""
    parts = cdiv(p.n, tile.block_n) * p.heads if tile.split else 0
    nvidia_only = tile.split or tile.max_registers
    return (tile.num_warps * device.warp_size <= device.threads_per_block and parts <= device.multiprocessors
            and shared_bytes(tile, p, backward, device.warp_size) <= device.shared_per_block
            and not (nvidia_only and device.vendor != "nvidia"))

