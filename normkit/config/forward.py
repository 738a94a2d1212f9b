"""The forward's tile: its tables (measured on an H200 with tools/tune.py; each entry's reason beside it) and
`forward_tile`, the ladder that reads them (docs/design.md#heuristics).

Times are the kernel's on an H200 (sm_90), M×N, before → after the entry; "ptxas": sm_90's register counts.
"""

from typing import Optional

from .shapes import Columns, Problem, Split, Whole
from .tile import TileConfig

# ---- whole rows (N ≤ WHOLE_ROW_MAX) ----

# Widest row held whole: 32768 values on 32 warps are 52 registers a thread, no spills (ptxas)
WHOLE_ROW_MAX = 32768
# Whole rows: ≥ 4096 elements a tile (rows stacked up to 64), ~16 values a thread (warps = elements / 512)
WHOLE_TILE_ELEMENTS = 4096
WHOLE_MAX_BLOCK_M = 64
# Every family's rows of 2048: one row on 4 warps, not two on 8 (bf16 16384×2048: LayerNorm 38.7 → 36.2 µs,
# the fused add 68.1 → 66.8, RMSNorm 35.8 → 35.2)
ROWS_2048 = Whole(block_m=1, warps=4)
# LayerNorm's two dependent reductions want fewer threads a row
LAYER_NORM_WHOLE = {
    1024: Whole(block_m=2, warps=4),  # bf16 16384×1024: 21.0 → 19.4 µs
    8192: Whole(block_m=1, warps=8),  # bf16 16384×8192: 147.8 → 131.7 µs (97 % of copy)
}
# LayerNorm's fp32 rows of 4096: two rows on 16 warps, held (16384×4096 133.7 → 130.7 µs; bf16 lost: 68.5 → 73)
LAYER_NORM_FP32_4096 = Whole(block_m=2, warps=16)
# Rows of 4096 that load 16 KB (the fused add's bf16 rows, fp32 rows) re-read on 16 warps (fused add
# bf16 16384×4096 133.6 → 128.0 µs)
WIDE_4096_WARPS = 16
# The fused LayerNorm, bf16 x beside an fp32 residual: fewer warps (8192×32768 872.6 → 822.3 µs on 8,
# 4096×16384 215.5 → 208.4 on 4)
FUSED_LAYER_NORM_FP32_RESIDUAL_WARPS = {16384: 4, 32768: 8}

# Whole rows of ≥ 4096 read x again for y (from L2: evict_last, then evict_first) instead of holding it: fewer
# registers, more rows in flight (RMSNorm bf16 8192×32768 295 → 259 µs, LayerNorm 4096×16384 112.7 → 73.2)
RELOAD_MIN = 4096
# ... under a 32-register cap for plain 2-byte RMSNorm rows of ≥ 16384 with a 2-byte y: two programs an SM
# (8192×32768 302 → 259 µs, 4096×16384 71.6 → 67.7; the fused add and a 4-byte y spill under it)
RELOAD_CAP = 32
RELOAD_CAP_MIN = 16384
# LayerNorm's 2-byte rows of 16384 (2-byte y and residual) held under a 64-register cap: two programs of 16
# warps an SM (4096×16384 bf16: plain 72.6 re-read → 70.7 µs, fused 139.0 held uncapped → 133.8)
LAYER_NORM_HELD_CAP_16384 = 64

# ---- column tiles (N > WHOLE_ROW_MAX) ----

# Rows wider than 32768: one row of 16384 columns on 32 warps, two reads (4096×65536 bf16 397 → 363 µs)
COLUMNS = Columns(block_m=1, block_n=16384, warps=32)
# LayerNorm's: 16 KB of x a tile on 16 warps, the statistics pass's loads staged 3 deep so the next tiles' are in
# flight while Chan's merge waits (bf16 4096×65536 441 → 384 µs, 2048×131072 498 → 403; fp32 801 → 785)
LAYER_NORM_COLUMNS = {size: Columns(block_m=1, block_n=16384 // size, warps=16, column_stages=3) for size in (2, 4, 8)}
# LayerNorm's bf16 rows of 32768 and 65536 without a residual: three reads (Σx, Σ(x − mean)², y) as
# torch.compile's kernel does (8192×32768 342 → 317 µs, 4096×65536 386 → 351; not 131072: 554 against 400)
LAYER_NORM_CENTERED = {
    32768: Columns(block_m=1, block_n=8192, warps=16, centered_pass=True),
    65536: Columns(block_m=1, block_n=16384, warps=32, centered_pass=True, max_registers=32),
}
# RMSNorm's 2-byte rows of 32768 with a 4-byte y: 16384-column tiles on 16 warps (bf16 8192×32768 422.5 → 393.3
# µs against the split parts, 400.1 for the whole row)
RMS_FP32_Y_COLUMNS = Columns(block_m=1, block_n=16384, warps=16)
# RMSNorm's 2-byte rows of 65536 with a 2-byte y: one whole row on 32 warps re-read for y, one program an SM,
# whose 17 MB in flight stay in L2 (bf16 4096×65536 307.7 → 256.6 µs; a 4-byte y spills it)
RMS_WHOLE_65536 = Whole(block_m=1, warps=32, reload=True)

# ---- split rows (docs/design.md#split-rows) ----

# RMSNorm's and LayerNorm's rows without a residual, one weight head, split between SPLIT_MIN and SPLIT_MAX;
# RMSNorm's 2-byte x with a 2-byte y from 131072 only (65536: RMS_WHOLE_65536)
SPLIT_MIN, SPLIT_MAX = 65536, 262144
# RMSNorm, 2-byte x: 16 KB parts of the wider of x and y on 4 warps, four an SM, the weight held in registers
# (bf16 2048×131072 349.6 → 317.1 µs against column tiles, holding the weight 282.2 → 273.8; fp32 y 640 → 490)
RMS_SPLIT = Split(block_m=1, part_bytes=16384, warps=4, per_sm=4, reload=True, hold_weight=True)
# RMSNorm, fp32 x: 16 KB parts on 8 warps, four an SM (4096×65536 676 → 578 µs; bf16 y 1024×262144 627 → 436)
RMS_SPLIT_FP32 = Split(block_m=1, part_bytes=16384, warps=8, per_sm=4, reload=True)
# ... holding the weight at 262144 with an fp32 y (1024×262144 591 → 534 µs; not at 65536 / 131072: +6 %)
RMS_SPLIT_FP32_262144 = Split(block_m=1, part_bytes=16384, warps=8, per_sm=4, reload=True, hold_weight=True)
# LayerNorm, 2-byte x: 16 KB parts of x on 4 warps, four an SM under a 128-register cap (bf16 2048×131072
# 385 → 349 µs, 1024×262144 406 → 338, 4096×65536 352 → 323 against the three reads)
LAYER_NORM_SPLIT = Split(block_m=1, part_bytes=16384, warps=4, per_sm=4, reload=True, max_registers=128)
# LayerNorm, fp32 x: the same parts holding the weight and bias (4096×65536 765 → 632 µs; holding 590 → 544)
LAYER_NORM_SPLIT_FP32 = Split(block_m=1, part_bytes=16384, warps=4, per_sm=4, reload=True, max_registers=128,
                              hold_weight=True)

# The fused add splits rows of more than 64 KB (fp32 8192×32768 1379 → 1261 µs: a whole fp32 row spills),
# the fused LayerNorm rows wider than WHOLE_ROW_MAX
FUSED_SPLIT_MIN_BYTES = 65536
# The fused forwards (2- and 4-byte x): 4 KB parts of the wider of x and the residual, eight an SM asked, their
# loads staged 3 deep, the previous row block held across the exchange (against column tiles: fused add bf16
# 4096×65536 722 → 550 µs; the fused LayerNorm 759 → 662; against re-reading parts: fp32 fused add 1185 → 1070)
FUSED_SPLIT_STAGED = Split(block_m=1, part_bytes=4096, warps=4, per_sm=8, stages=3)
# ... where those parts cannot all be resident, or for fp64: 8 KB parts of x re-reading the previous row block
# (fused add bf16 4096×65536 722 → 607 µs against column tiles)
FUSED_SPLIT = Split(block_m=1, part_bytes=8192, warps=8, per_sm=4, reload=True)


def forward_tile(p: Problem) -> TileConfig:
    """The forward's tile on a GPU, the first rung that answers: split rows without a residual, LayerNorm's three
    reads, the fused forwards' split rows, column tiles (and RMSNorm's whole rows of 65536), whole rows."""
    whole, x, y = p.whole, p.x_bytes, p.y_bytes
    plain_rms = not (p.residual or p.layer_norm)
    split = _plain_split(p)  # RMSNorm's parts are sized by the wider of x and y, LayerNorm's by x
    if split is not None and p.fits(tile := split.tile(max(x, y) if plain_rms else x)):
        return tile
    if (p.layer_norm and x == 2 and not p.residual and whole in LAYER_NORM_CENTERED
            and not (y == 4 and whole == WHOLE_ROW_MAX)):  # with a 4-byte y its rows of 32768 stay whole
        return LAYER_NORM_CENTERED[whole].tile()
    fused_wide = whole > WHOLE_ROW_MAX if p.layer_norm else whole * x > FUSED_SPLIT_MIN_BYTES
    if p.residual and p.heads == 1 and fused_wide:
        staged, rereading = FUSED_SPLIT_STAGED.tile(max(x, p.residual_bytes)), FUSED_SPLIT.tile(x)
        if x <= 4 and p.fits(staged):
            return staged
        if p.fits(rereading):
            return rereading
    if p.layer_norm and whole > WHOLE_ROW_MAX:
        return LAYER_NORM_COLUMNS[x].tile()
    if plain_rms and (x, y) == (2, 4) and whole == WHOLE_ROW_MAX:
        return RMS_FP32_Y_COLUMNS.tile()
    if plain_rms and x == y == 2 and whole == 65536:
        return RMS_WHOLE_65536.tile(whole)
    if whole > WHOLE_ROW_MAX:
        return COLUMNS.tile()
    return _whole_row(p)


def _plain_split(p: Problem) -> Optional[Split]:
    """The split parts of RMSNorm's and LayerNorm's rows without a residual (one weight head), or None."""
    x, y = p.x_bytes, p.y_bytes
    if p.residual or p.heads != 1 or not SPLIT_MIN <= p.whole <= SPLIT_MAX or x not in (2, 4) or y not in (2, 4):
        return None
    if p.layer_norm:
        return LAYER_NORM_SPLIT if x == 2 else LAYER_NORM_SPLIT_FP32
    if x == 2:
        return RMS_SPLIT if y == 4 or p.whole > 65536 else None
    return RMS_SPLIT_FP32_262144 if y == 4 and p.whole == 262144 else RMS_SPLIT_FP32


def _whole_row(p: Problem) -> TileConfig:
    """Whole rows (N ≤ WHOLE_ROW_MAX): the shape from the tables or the generic rule, y re-read or held."""
    whole, x = p.whole, p.x_bytes
    if p.layer_norm and x == 4 and whole == 4096:
        return LAYER_NORM_FP32_4096.tile(whole)
    reload, cap = _reads_y_again(p)
    if p.layer_norm and whole in LAYER_NORM_WHOLE:
        shape = LAYER_NORM_WHOLE[whole]
    elif whole == 2048:
        shape = ROWS_2048
    else:
        block_m = max(1, min(WHOLE_MAX_BLOCK_M, WHOLE_TILE_ELEMENTS // whole))
        # 32 warps only where the row needs them to stay in registers
        warps = max(1, min(32 if whole > 16384 else 16, block_m * whole // 512))
        if reload and whole == 4096 and not p.layer_norm and (p.residual or x == 4):
            warps = WIDE_4096_WARPS
        if p.layer_norm and p.residual and x == 2 and p.residual_bytes == 4:
            warps = FUSED_LAYER_NORM_FP32_RESIDUAL_WARPS.get(whole, warps)
        shape = Whole(block_m, warps)
    return TileConfig(shape.block_m, whole, True, shape.warps, reload=reload, max_registers=cap)


def _reads_y_again(p: Problem) -> tuple:
    """(reload, max_registers) of a whole row: rows of ≥ RELOAD_MIN read x again for y, but for those `held` names."""
    whole, x, y, ln = p.whole, p.x_bytes, p.y_bytes, p.layer_norm
    all_2_byte = x == y == 2 and (not p.residual or p.residual_bytes == 2)
    held_cap = LAYER_NORM_HELD_CAP_16384 if ln and all_2_byte and whole == 16384 else 0
    held = (
        # RMSNorm's fp32 x with a 2-byte y, rows of 32768 (8192×32768 433.6 → 386.3 µs)
        not (ln or p.residual) and (x, y) == (4, 2) and whole == 32768
        # the fused forwards' 2-byte x beside a 4-byte residual, rows of 8192 and 32768 (fused add bf16
        # 8192×32768 982.9 → 782.4 µs, 16384×8192 407.2 → 391.6)
        or p.residual and x == 2 and p.residual_bytes == 4 and whole in (8192, 32768)
        # LayerNorm's rows of 32768 (re-read: fp32 ±1.5 %) and its capped 2-byte rows of 16384
        or ln and (whole == WHOLE_ROW_MAX or held_cap)
        # the fused LayerNorm's rows of 16384 (bf16 4096×16384 143.6 → 138.2 µs, fp32 292.3 → 272.7)
        or ln and p.residual and whole == 16384)
    reload = whole >= RELOAD_MIN and not held
    capped = reload and whole >= RELOAD_CAP_MIN and not (ln or p.residual) and x == y == 2
    return reload, RELOAD_CAP if capped else held_cap
