"""The backward's tile: its tables (measured on an H200 with tools/tune.py; each entry's reason beside it) and
`backward_tile`, the ladder that reads them (docs/design.md#heuristics). Also what a launch derives from the
tile: `may_stage`, `joins_stats`, `even_cols`.

Times are the kernel's on an H200 (sm_90), M×N, bf16 unless said, before → after the entry.
"""

from typing import Optional

from .shapes import Columns, Problem, Split, Whole
from .tile import TileConfig

# ---- whole rows (N ≤ WHOLE_ROW_MAX) ----

# Widest row held whole: x, dy, the weight and the dweight partial live at once; a row of 16384 on 8 warps spills,
# yet beat column tiles (4096×16384 233 → 146 µs); 32768 lost to them
WHOLE_ROW_MAX = 16384
# Short rows: 8192 elements a tile (up to 64 rows) on 4 warps, two an SM (16384×4096 160 → 119 µs against
# 4096-element tiles on 8 warps, four an SM; QK-norm 524288×128: 64 rows 240 → 156 µs against 32)
SHORT_TILE_ELEMENTS, SHORT_MAX_BLOCK_M = 8192, 64
# QK-norm rows of 128 that do not stage (4-byte, or not vector-aligned), without dresidual_out: 32 rows on
# 2 warps, four an SM (524288×128 140.7 → 130.3 µs)
SHORT_128 = Whole(block_m=32, warps=2, per_sm=4)
# 2-byte vector-aligned rows: the row loop's loads staged 3 deep in shared memory (cp.async), two row blocks in
# flight a program against prefetch's one (16384 rows, RMSNorm / LayerNorm, against the prefetching tiles)
STAGED_WHOLE = {
    128: Whole(block_m=16, warps=1, per_sm=4, stages=3),  # 524288×128 RMSNorm 113.8 → 101.5 µs
    256: Whole(block_m=8, warps=1, per_sm=4, stages=3),  # 262144×256 RMSNorm 156.5 → 101.2 µs
    1024: Whole(block_m=4, warps=4, per_sm=2, stages=3),  # 29.6 → 28.0 µs / 30.8 → 29.0
    2048: Whole(block_m=2, warps=4, per_sm=2, stages=3),  # 53.2 → 51.8 µs / 55.0 → 52.7
    4096: Whole(block_m=2, warps=8, per_sm=1, stages=3),  # 103.3 → 99.9 µs / 105.6 → 102.1
    8192: Whole(block_m=1, warps=8, per_sm=1, stages=3),  # 200.8 → 196.3 µs / 206.0 → 199.2
}
# ... LayerNorm's short rows: half the rows, twice the programs (it holds more a row)
STAGED_WHOLE_LAYER_NORM = {
    128: Whole(block_m=8, warps=1, per_sm=8, stages=3),  # 524288×128 121.6 → 107.9 µs against RMSNorm's tile
    256: Whole(block_m=4, warps=1, per_sm=8, stages=3),  # by analogy (262144×256 223.7 → 102.3 µs)
}
# ... the fused add's (dresidual_out) short rows on 2 warps, and its rows up to STAGED_FUSED_MAX
STAGED_WHOLE_FUSED = {
    128: Whole(block_m=16, warps=2, per_sm=4, stages=3),  # 524288×128 133.1 → 130.6 µs against 1 warp
    256: Whole(block_m=8, warps=2, per_sm=4, stages=3),  # by analogy (262144×256 182.3 → 135.7 µs)
}
# The fused add's rows of 8192 keep prefetching (+1.3 µs staged); the fused LayerNorm's stage (16384×8192
# 311.9 → 264.2 µs)
STAGED_FUSED_MAX = {False: 4096, True: 8192}  # keyed by layer_norm
# fp32 rows of 4096 without dresidual_out: neither prefetch nor staging, so two fit an SM (16384×4096 RMSNorm
# 200.3 → 191.9 µs, LayerNorm 196.9 → 195.2)
PLAIN_FP32_4096 = Whole(block_m=1, warps=8, per_sm=2)
# Rows of 1024 … 8192 that do not stage (4- and 8-byte, unaligned, the fused add's 8192): the next row block's
# loads in flight during this block's math; one-row tiles sum Σ(g·h) and Σg in one tree (fused add 1 × 8192
# 270.0 → 255.8 µs; tiles of several rows lost: LayerNorm 2 × 4096 107.1 → 125.8)
PREFETCH_WHOLE = {
    1024: Whole(block_m=2, warps=4, per_sm=4, prefetch=True),  # 16384×1024 RMSNorm 30.7 → 29.8 µs
    2048: Whole(block_m=2, warps=8, per_sm=2, prefetch=True),  # 16384×2048 61.6 → 60.1 µs
    4096: Whole(block_m=2, warps=16, per_sm=1, prefetch=True),  # 16384×4096 139.7 → 108.0 µs
    8192: Whole(block_m=1, warps=16, per_sm=1, prefetch=True, joined_sums=True),  # 16384×8192 256.6 → 206.1 µs
}
# ... the fused add (a fourth stream, dresidual_out): one row on half the warps, twice the programs
PREFETCH_WHOLE_FUSED = {
    2048: Whole(block_m=1, warps=4, per_sm=4, prefetch=True, joined_sums=True),  # 16384×2048 72.4 → 69.6 µs
    4096: Whole(block_m=1, warps=8, per_sm=2, prefetch=True, joined_sums=True),  # 16384×4096 143.2 → 137.9 µs
}
# ... its fp32 rows of 4096 on 16 warps, one an SM (8 warps need 168 registers; 16384×4096 280.2 → 253.5 µs)
PREFETCH_FUSED_FP32_4096 = Whole(block_m=1, warps=16, per_sm=1, prefetch=True, joined_sums=True)
# Rows of 16384 whose split parts cannot all be resident: the whole row on 8 warps (it spills, still ahead)
WHOLE_16384 = Whole(block_m=1, warps=8, per_sm=1)
# Wider rows that cannot split: two rows × 4096 columns on 16 warps, two passes (won 3 of 4 wide shapes, 2-45 %)
COLUMNS = Columns(block_m=2, block_n=4096, warps=16, per_sm=2)

# ---- split rows, prefetching parts (docs/design.md#split-rows) ----

# LayerNorm's 2-byte rows: 2 × 2048 on 4 warps, two an SM (8192×32768 631.8 → 578.1 µs, 4096×65536 683 → 598)
LAYER_NORM_PARTS = Split(block_m=2, part_bytes=4096, warps=4, per_sm=2, prefetch=True)
# ... its rows of 32768: 2 × 2048 on 8 warps, capped at 128 registers, two an SM (8192×32768 580.7 → 543.2 µs)
LAYER_NORM_PARTS_32768 = Split(block_m=2, part_bytes=4096, warps=8, per_sm=2, max_registers=128, prefetch=True)
# RMSNorm's 2-byte rows: 1 × 4096 on 4 warps, two an SM (8192×32768 550.6 → 502.3 µs, 4096×16384 125.0 → 118.2)
RMS_PARTS = Split(block_m=1, part_bytes=8192, warps=4, per_sm=2, prefetch=True)
# 1 × 2048 on 4 warps capped at 128 registers, four an SM: RMSNorm's and the fused add's rows of 65536 and 262144,
# the fused add's of 16384 (RMSNorm 4096×65536 448.8 → 433.2 µs, fused add 629.7 → 598.9; ×16384 163.5 → 158.7)
CAPPED_PARTS = Split(block_m=1, part_bytes=4096, warps=4, per_sm=4, max_registers=128, prefetch=True)
# ... at 131072: 1 × 4096 on 8 warps capped, two an SM (RMSNorm 2048×131072 463.7 → 438.4 µs, fused add 642 → 614)
CAPPED_PARTS_131072 = Split(block_m=1, part_bytes=8192, warps=8, per_sm=2, max_registers=128, prefetch=True)
# Where the paired parts cannot all be resident: 2 × 4096 on 8 warps, one an SM (LayerNorm 4096×65536
# 814.5 → 689.1 µs against 1 × 8192; fused add 4096×16384 202.7 → 172.2 against the whole row)
FEWER_PARTS = Split(block_m=2, part_bytes=8192, warps=8, per_sm=1, prefetch=True)
# ... then 1 × 8192 on 8 warps, one an SM (8192×32768 682 → 606 µs against 2 × 8192 on 16 unprefetched);
# also the fused add's rows wider than 65536 (32 parts of 4096 lost: 2048×131072 709.3 → 755.8 µs)
FEWEST_PARTS = Split(block_m=1, part_bytes=16384, warps=8, per_sm=1, prefetch=True)
# fp32 rows: 1 × 2048 on 4 warps, two an SM, holding the previous row block (RMSNorm 4096×65536 877.3 → 854.3 µs)
FP32_PARTS_HELD = Split(block_m=1, part_bytes=8192, warps=4, per_sm=2, prefetch=True)
FP32_HELD_MAX = {False: 65536, True: 16384}  # keyed by layer_norm; the fused add's never hold it
# ... wider, or the fused add's: re-reading it after the exchange, three an SM (RMSNorm 2048×131072 965.3 → 920.7)
FP32_PARTS_REREAD = Split(block_m=1, part_bytes=8192, warps=4, per_sm=3, reload=True, prefetch=True)
# fp64 rows, and fp32 ones where those parts cannot all be resident: 16 KB parts on 16 warps, one an SM (the
# 2-byte parts in fp32 spill: 8192×32768 13362 → 1031 µs)
FP64_PARTS = Split(block_m=1, part_bytes=16384, warps=16, per_sm=1, prefetch=True)

# ---- split rows, staged parts (vector-aligned rows: the exchange's wait spins in PTX, so Triton's pipeliner
# takes the parts' row loop and stages its loads in shared memory) ----

# 2-byte parts: 1 × 2048 on 4 warps, four an SM, 3 deep (RMSNorm 8192×32768 440.3 → 410.1 µs, fused add 631 → 508)
STAGED_PARTS = Split(block_m=1, part_bytes=4096, warps=4, per_sm=4, max_registers=128, stages=3)
# ... the fused LayerNorm's rows of 32768 / 65536 four deep (607 → 580 µs, 625 → 596)
STAGED_PARTS_FOUR_DEEP = Split(block_m=1, part_bytes=4096, warps=4, per_sm=4, max_registers=128, stages=4)
# 1 × 4096 on 4 warps, two an SM (RMSNorm 2048×131072 438.9 → 430.6 µs; LayerNorm 4096×65536 512.8 → 448.8)
STAGED_WIDER_PARTS = Split(block_m=1, part_bytes=8192, warps=4, per_sm=2, stages=3)
# 1 × 8192 on 8 warps, one an SM (recomputing LayerNorm 1024×262144 740.8 → 554.9 µs)
STAGED_WIDEST_PARTS = Split(block_m=1, part_bytes=16384, warps=8, per_sm=1, stages=3)
STAGED_RMS = {131072: STAGED_WIDER_PARTS}  # RMSNorm without dresidual_out; else STAGED_PARTS
# LayerNorm without dresidual_out (4096×16384 134.3 → 126.6 µs; 8192×32768 512.3 → 486.0), the fused LayerNorm
# (else STAGED_PARTS; 2048×131072 609.5 → 551.0 µs)
STAGED_LAYER_NORM = {16384: STAGED_PARTS, 32768: STAGED_WIDER_PARTS, 65536: STAGED_WIDER_PARTS,
                     131072: STAGED_WIDER_PARTS, 262144: STAGED_WIDER_PARTS}
STAGED_FUSED_LAYER_NORM = {32768: STAGED_PARTS_FOUR_DEEP, 65536: STAGED_PARTS_FOUR_DEEP, 131072: STAGED_WIDER_PARTS}
# Recomputing the statistics (one spin wait takes the row sums and the statistics): 4096×65536 667.5 → 502.0 µs
STAGED_LAYER_NORM_RECOMPUTE = {**STAGED_LAYER_NORM, 16384: STAGED_WIDER_PARTS, 262144: STAGED_WIDEST_PARTS}
# fp32 parts: 1 × 1024 on 4 warps, four an SM (RMSNorm 4096×16384 219.8 → 200.9 µs; fused add 290.2 → 253.4)
STAGED_FP32 = Split(block_m=1, part_bytes=4096, warps=4, per_sm=4, stages=3)
# ... RMSNorm's rows of 65536: 1 × 2048 on 8 warps, two an SM (4096×65536 850.4 → 803.8 µs)
STAGED_FP32_RMS = {65536: Split(block_m=1, part_bytes=8192, warps=8, per_sm=2, stages=3)}
# LayerNorm's and every recomputing fp32 part: 1 × 2048 on 4 warps, three an SM, four deep (LayerNorm
# 8192×32768 926.6 → 811; recomputing RMSNorm 4096×65536 855.4 → 758.9)
STAGED_FP32_LAYER_NORM = Split(block_m=1, part_bytes=8192, warps=4, per_sm=3, stages=4)
# ... LayerNorm's rows of 131072: 1 × 4096 on 8 warps, one an SM, four deep (2048×131072 902 → 865 µs)
STAGED_FP32_LAYER_NORM_131072 = Split(block_m=1, part_bytes=16384, warps=8, per_sm=1, stages=4)
# ... recomputing LayerNorm's: 1 × 4096 on 8 warps, 3 deep, {(residual, width): parts, None: keep prefetching}
# (2048×131072 1078 → 951 µs; the fused 1024×262144 1429 → 1371; unfused 262144 keeps prefetching: 1300 → 1005)
STAGED_FP32_LAYER_NORM_RECOMPUTE = {(False, 131072): STAGED_WIDEST_PARTS, (False, 262144): None,
                                    (True, 131072): STAGED_WIDEST_PARTS, (True, 262144): STAGED_WIDEST_PARTS}

# The recomputing backward's split parts join their statistics' sum into the tree of Σ(g·h) / Σg (three barriers
# fewer), but RMSNorm's parts holding more than 16 elements a thread (4096×16384 122.8 → 131.8 µs joined)
JOIN_STATS_RMS_MAX_ELEMENTS = 16


def backward_tile(p: Problem) -> TileConfig:
    """The backward's tile on a GPU, the first rung that answers: staged whole rows (2-byte, vector-aligned),
    whole rows of 128 … 8192, split parts whose every part is resident, a whole row of 16384, column tiles."""
    whole, x = p.whole, p.x_bytes
    staged = _staged_whole(p) if x == 2 and p.vector_aligned else None
    if staged is not None:
        return staged.tile(whole)
    if x == 4 and whole == 4096 and not p.residual:
        return PLAIN_FP32_4096.tile(whole)
    if whole in PREFETCH_WHOLE:
        return _prefetch_whole(p).tile(whole)
    if whole == 128 and not p.residual:
        return SHORT_128.tile(whole)
    if whole < 1024:
        return Whole(block_m=min(SHORT_MAX_BLOCK_M, SHORT_TILE_ELEMENTS // whole), warps=4, per_sm=2).tile(whole)
    for split in _split_candidates(p):
        if p.fits(tile := split.tile(x)):
            return tile
    return WHOLE_16384.tile(whole) if whole <= WHOLE_ROW_MAX else COLUMNS.tile()


def _staged_whole(p: Problem) -> Optional[Whole]:
    whole = p.whole
    if p.residual:
        if whole in STAGED_WHOLE_FUSED:
            return STAGED_WHOLE_FUSED[whole]
        if whole > STAGED_FUSED_MAX[p.layer_norm]:
            return None
    elif p.layer_norm and whole in STAGED_WHOLE_LAYER_NORM:
        return STAGED_WHOLE_LAYER_NORM[whole]
    return STAGED_WHOLE.get(whole)


def _prefetch_whole(p: Problem) -> Whole:
    if p.residual and p.x_bytes == 4 and p.whole == 4096:
        return PREFETCH_FUSED_FP32_4096
    if p.residual and p.whole in PREFETCH_WHOLE_FUSED:
        return PREFETCH_WHOLE_FUSED[p.whole]
    return PREFETCH_WHOLE[p.whole]


def _split_candidates(p: Problem) -> tuple:
    """The split parts for the row, best first: the ladder takes the first whose parts all fit."""
    staged = _staged_split(p) if p.vector_aligned else None
    return ((staged,) if staged else ()) + _prefetching_splits(p)


def _staged_split(p: Problem) -> Optional[Split]:
    whole = p.whole
    if p.x_bytes == 4:
        if p.recompute and p.layer_norm:
            return STAGED_FP32_LAYER_NORM_RECOMPUTE.get((p.residual, whole), STAGED_FP32_LAYER_NORM)
        if p.recompute or p.layer_norm:
            wide = p.layer_norm and not p.residual and whole == 131072 and not p.recompute
            return STAGED_FP32_LAYER_NORM_131072 if wide else STAGED_FP32_LAYER_NORM
        return STAGED_FP32 if p.residual else STAGED_FP32_RMS.get(whole, STAGED_FP32)
    if p.x_bytes != 2:
        return None
    if p.layer_norm and p.recompute:
        return STAGED_LAYER_NORM_RECOMPUTE.get(whole)
    if p.layer_norm:
        return STAGED_FUSED_LAYER_NORM.get(whole, STAGED_PARTS) if p.residual else STAGED_LAYER_NORM.get(whole)
    return STAGED_PARTS if p.residual else STAGED_RMS.get(whole, STAGED_PARTS)


def _prefetching_splits(p: Problem) -> tuple:
    whole, x = p.whole, p.x_bytes
    if x > 4:
        return (FP64_PARTS,)
    if x == 4:
        held = not p.residual and whole <= FP32_HELD_MAX[p.layer_norm]
        return (FP32_PARTS_HELD if held else FP32_PARTS_REREAD, FP64_PARTS)
    if whole <= WHOLE_ROW_MAX:
        return (LAYER_NORM_PARTS if p.layer_norm else CAPPED_PARTS if p.residual else RMS_PARTS, FEWER_PARTS)
    if p.layer_norm:
        first = LAYER_NORM_PARTS_32768 if whole == 32768 and not p.residual else LAYER_NORM_PARTS
        return (first, FEWER_PARTS, FEWEST_PARTS)
    first = {65536: (CAPPED_PARTS,), 131072: (CAPPED_PARTS_131072,), 262144: (CAPPED_PARTS,)}.get(whole, ())
    if p.residual and whole > 131072:
        first = ()
    return first + (FEWEST_PARTS,) if p.residual and whole > 65536 else first + (RMS_PARTS, FEWEST_PARTS)


def may_stage(n: int, element_size: int) -> bool:
    """Whether the backward's tile for rows of n may stage its loads in shared memory — 2-byte rows, and 4-byte
    rows split across programs — so `tile_config` needs to know `vector_aligned`."""
    return element_size == 2 or (element_size == 4 and n > WHOLE_ROW_MAX // 2)


def joins_stats(config: TileConfig, layer_norm: bool) -> bool:
    """Whether a recomputing backward's split parts (config.split) reduce their statistics' sum in one tree
    with Σ(g·h) / Σg (kernels/backward.py JOIN_STATS)."""
    per_thread = config.block_m * config.block_n // (32 * config.num_warps)
    return config.split and (layer_norm or per_thread <= JOIN_STATS_RMS_MAX_ELEMENTS)


def even_cols(config: TileConfig, n: int, element_size: int) -> bool:
    """Whether the backward launches with EVEN_COLS (kernels/backward.py: no column mask): a one-tile config
    whose block_n divides n, for 2-byte inputs — 3-7 % fewer instructions a row loop; fp32 split parts ran
    0.3-1.2 % slower without their mask (LayerNorm 4096×16384 201.1 → 203.6 µs)."""
    return config.one_tile and n % config.block_n == 0 and element_size < 4
