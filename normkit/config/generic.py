"""The generic ladder: tiles for any GPU but the H200's sm_90, derived from the `Device` record
(docs/design.md#heuristics). Nothing here was tuned on the GPUs it serves; it takes the shapes of the H200's
tables that need no particular device, and keeps to what every target allows:

- no staged loads (cp.async / LDS pipelines), so shared memory holds only reductions' scratch;
- at most threads_per_block threads a program, warps counted in the device's warp size (64 on AMD);
- no register caps (a cap is taken only where a sweep measured it);
- split rows only on NVIDIA GPUs (whose residency rules the launcher applies to the compiled kernel) and only
  where every part of every head gets a multiprocessor of its own; elsewhere column tiles.
"""

from dataclasses import replace
from typing import Optional

from . import backward as tuned_backward
from .device import Device, shared_bytes
from .shapes import Columns, Problem, Whole
from .tile import TileConfig, cdiv

# Forward: whole rows up to 16384 values (16-32 a thread on 16 warps), x read again for y from 4096
FORWARD_WHOLE_MAX = 16384
RELOAD_MIN = 4096
VALUES_A_THREAD = 16  # whole rows' and column tiles' values a thread (the H200's whole-row rule: 4096 on 8 warps)
WHOLE_TILE_ELEMENTS, WHOLE_MAX_BLOCK_M, WHOLE_MAX_WARPS = 4096, 64, 16
# Backward: whole rows up to 16 KB (8192 2-byte values), the next row block loaded ahead in registers: the H200's
# PREFETCH_WHOLE tile of the 2-byte row as wide in bytes (a 4096-value fp32 row takes the 8192 one's warps)
BACKWARD_WHOLE_MAX_BYTES = 16384
# Shorter rows: 16 KB of x a tile (up to 64 rows) on 4 warps, two an SM (the H200's 8192 2-byte values)
SHORT_TILE_BYTES, SHORT_MAX_BLOCK_M = 16384, 64
# Wider rows that do not split: two passes over 2 × 4096 tiles on 16 warps (the H200's COLUMNS)
BACKWARD_COLUMNS = Columns(block_m=2, block_n=4096, warps=16, per_sm=2)
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
    warps = min(WHOLE_MAX_WARPS, device.max_warps)
    return Columns(block_m=1, block_n=VALUES_A_THREAD * device.warp_size * warps, warps=warps).tile()


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
    """The H200's prefetching parts without their register caps, best first."""
    b = tuned_backward
    if p.x_bytes > 4:
        return (b.FP64_PARTS,)
    if p.x_bytes == 4:
        return (b.FP32_PARTS_REREAD if p.residual else b.FP32_PARTS_HELD, b.FP64_PARTS)
    first = b.LAYER_NORM_PARTS if p.layer_norm else b.RMS_PARTS
    return (first, b.FEWER_PARTS, b.FEWEST_PARTS)


def fits_device(tile: TileConfig, p: Problem, device: Device, backward: bool) -> bool:
    """Whether a tile keeps within the device's threads and shared memory a program (`shared_bytes`), and splits
    rows or caps registers (ptxas' maxnreg) only on an NVIDIA GPU — split, where every part of every head gets an
    SM of its own."""
    parts = cdiv(p.n, tile.block_n) * p.heads if tile.split else 0
    nvidia_only = tile.split or tile.max_registers
    return (tile.num_warps * device.warp_size <= device.threads_per_block and parts <= device.multiprocessors
            and shared_bytes(tile, p, backward, device.warp_size) <= device.shared_per_block
            and not (nvidia_only and device.vendor != "nvidia"))

