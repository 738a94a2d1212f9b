"""Launch heuristics: tile shape, warps and grid from N, the element size and the device.

Pure functions of their arguments (cached), so no device query or Python work that a cache can
hold runs on every call. Every constant has its reason beside it. Tests may pass a `TileConfig`
of their own to the launchers in `normkit.ops` to reach every code path on small shapes.
"""

import dataclasses
import functools
from dataclasses import dataclass
from typing import Optional



@dataclass(frozen=True)
class TileConfig:
    """How one program walks its rows: a BLOCK_M × BLOCK_N tile, whole row or column tiles."""

    block_m: int  # rows per tile
    block_n: int  # columns per tile (a power of two)
    one_tile: bool  # the whole row fits in one tile and stays in registers (forward: unless reload)
    num_warps: int = 4
    programs_per_sm: int = 1  # backward only: persistent programs per multiprocessor
    num_stages: int = 3  # Triton's launch option (its default); it pipelines none of these loops by itself:
    # a loop is pipelined only when it carries num_stages (the backward's row loop: async_stages)
    split: bool = False  # each row cut into cdiv(N, block_n) parts, one (resident) program each (backward;
    # forward: the fused add's wide rows)
    prefetch: bool = False  # backward, one_tile: the next row block's loads go out before this block's math
    joined_sums: bool = False  # backward, one_tile: Σ(g·h) and Σg in one reduction tree (JOIN_SUMS;
    # LayerNorm only — RMSNorm, which shares the tiles, has the one sum Σ(g·h))
    async_stages: int = 0  # backward, one_tile, not split nor prefetch: ≥ 2 stages the row loop's loads in
    # shared memory (cp.async, Triton's software pipeliner; ASYNC_STAGES), 0 leaves them in registers
    reload: bool = False  # forward, one_tile: y from the row read again (from L2; RELOAD), not from registers
    max_registers: int = 0  # ptxas' register cap (Triton's maxnreg), 0 for none; the backward's grid is
    # fitted to the programs the capped kernel leaves resident
    column_stages: int = 0  # forward, column tiles: ≥ 2 stages the statistics pass's loads in shared
    # memory (cp.async; COLUMN_STAGES), 0 leaves them in registers
    centered_pass: bool = False  # forward, column tiles, LayerNorm: per-lane Σh, then a second statistics
    # pass of per-lane Σ(h − mean)² (CENTERED_PASS), not Chan's merge of every tile

    def __post_init__(self):
        if self.split and not self.one_tile:
            raise ValueError("a split config holds each part of a row in registers: it needs one_tile=True, "
                             f"got {self}")
        if self.prefetch and not self.one_tile:
            raise ValueError(f"prefetch holds the next row block in registers: it needs one_tile=True, got {self}")
        if self.joined_sums and not self.one_tile:
            raise ValueError(f"joined_sums reduces a whole row held in registers: it needs one_tile=True, got {self}")
        if self.async_stages == 1 or self.async_stages < 0:
            raise ValueError(f"async_stages is 0 (no pipeline) or a depth of 2 or more, got {self.async_stages}")
        if self.reload and not self.one_tile:
            raise ValueError(f"reload re-reads a whole row held in one tile: it needs one_tile=True, got {self}")
        if self.column_stages and (self.one_tile or self.column_stages < 2):
            raise ValueError(f"column_stages is 0 or a depth of 2 or more, for column tiles (one_tile=False), got {self}")
        if self.centered_pass and self.one_tile:
            raise ValueError(f"centered_pass is a second pass over column tiles: it needs one_tile=False, got {self}")
        if self.max_registers < 0:
            raise ValueError(f"max_registers is 0 (no cap) or ptxas' register cap, got {self.max_registers}")
        if self.async_stages and not (self.one_tile and not self.split and not self.prefetch):
            raise ValueError("async_stages pipelines the whole-row loop's loads: it needs one_tile=True, "
                             f"split=False and prefetch=False (another way to load ahead), got {self}")


# The constants below come from `tools/tune.py` on an H200 (2026-11-29, bf16, BENCHMARKS.md):
# every candidate tile/warps/programs-per-SM timed per shape, the rule fitted to the winners.
#
# Widest row kept whole in registers. Forward: only x lives across the reduction; 32768 values
# over 32 warps is 32 registers a thread (ptxas: 52 registers, no spills; re-read for y under
# _FWD_RELOAD_CAP: 32). Backward: x, dy, w and
# the dweight partial are live at once; a 16384 row on 8 warps spills, yet ran 4096×16384 in
# 146 µs against 233 for two passes over column tiles (run C); 32768 lost to column tiles.
_MAX_ONE_TILE_FWD = 32768
_MAX_ONE_TILE_BWD = 16384
# Column tile for rows wider than that (two passes over the row, the second mostly from L2):
# 4096 × 2 rows × 16 warps won 3 of 4 wide shapes (4096×16384 … 2048×131072) by 2-45 %.
_COLUMN_TILE = 4096
_COLUMN_TILE_ROWS = 2
# The forward's column tiles (rows wider than _MAX_ONE_TILE_FWD) read each row twice, the second
# time hopefully from L2: one row of 16384-column tiles on 32 warps (2 programs an SM, ~34 MB of
# rows in flight at 65536 bf16 columns) ran 4096×65536 in 363 µs against 397 for 2 rows × 4096 on
# 16 warps (run R, tools/tune.py --kind fwd; 16 warps: 396).
_FWD_COLUMN_TILE = 16384
# LayerNorm's column tiles (two dependent block reductions a tile: Chan's merge) wait for each
# tile's loads; 8192-column tiles on 16 warps with the statistics pass's loads staged 3 deep in
# shared memory (cp.async: column_stages) keep the next tiles' loads in flight meanwhile. Run ZZR
# (tools/tune.py --kind fwd --config, bf16, µs): 4096×65536 384.3 against 441.2 for the 16384
# tile unstaged (2 stages 425.4; 4096 columns 402.0), 2048×131072 402.9 against 497.5. Staging
# did not help RMSNorm (4096×65536 381.8 against 309.0) nor the fused add (845.5 against 719.9).
# The tile is 16 KB of x: fp32 4096 columns (run ZZS: 4096×65536 785.3 against 800.7 for the
# unstaged 16384 and 858.3 for 8192 staged; fp64 2048 by analogy, not measured).
# (block_m, tile bytes, num_warps, column_stages)
_FWD_LAYER_NORM_COLUMNS = (1, 16384, 16, 3)
# The fused add's rows wider than _MAX_ONE_TILE_FWD: split rows (kernels/forward.py's _split_rows,
# the backward's pipelined exchange), each part's 4096 columns read once from HBM and once more
# from L2, 4 programs an SM (ptxas: 48 registers, 5 fit). Run ZZR (tools/tune.py --config
# 1x4096:8:split:p4, bf16, µs): 4096×65536 607.3 against 722.3 for the column tiles, 2048×131072
# 613.3 against 818.9; 2 programs an SM 794.5 / 746.2. Not RMSNorm (375.4 against the column
# tiles' 309.0) nor LayerNorm (523.3 against 444.0). A part is 8 KB of x: fp32 2048 columns (run
# ZZS, fp32 4096×65536: 1203.4 against 1320.0 for 4096 and 1425.3 for the column tiles; fp64 1024
# by analogy, not measured). (block_m, part bytes, num_warps, programs_per_sm)
_FWD_SPLIT_RESIDUAL = (1, 8192, 8, 4)
# The split takes the fused add's rows of more than 64 KB (bf16 rows wider than 32768, fp32 rows of
# 32768: a whole fp32 row re-read for y spills 80 B). Run ZZZ's sweep (fp32 8192×32768, µs): 8 KB
# parts 1261.2 against 1379.2 for the whole row (16 KB parts 1418.0; 2 programs an SM 1764.0).
_FWD_SPLIT_MIN_BYTES = 65536
# RMSNorm's fp32 rows of 65536 / 131072 without a residual split too, in 32 parts a row (the column
# tiles reach 64-69 %). Run ZZZI's sweep (tools/tune.py --kind fwd --config, µs): 4096×65536 1 × 2048
# on 4 warps, 4 an SM, 670.1 against the column tiles' 735.1 (1 × 4096 on 8, 2 an SM: 797.2);
# 2048×131072 1 × 4096 on 8 warps, 2 an SM, 715.6 against 797.0 (1 × 2048 on 4: 825.1). Not bf16
# (2048×131072: 398-415 against 374) nor LayerNorm (fp32 4096×65536 796 against 788).
# {whole: (block_m, block_n, num_warps, programs_per_sm)}
_FWD_SPLIT_RMS_4_BYTE = {65536: (1, 2048, 4, 4), 131072: (1, 4096, 8, 2)}
# LayerNorm's bf16 rows of 32768 and 65536: column tiles read three times (centered_pass), as
# torch.compile's kernel at 8192×32768 (tools/inductor_code.py, run ZZX: Σx, then Σ(x − mean)², then
# y, over 1 × 16384 on 32 warps, 280.0 µs against normkit's whole row 341.7). Sweeps (runs ZZY and
# its repeat, tools/tune.py --config, the heuristic in the same process, µs): 8192×32768 1 × 8192 on
# 16 warps 321.6 / 327.8 against the whole row 345.0 / 346.7; 4096×65536 1 × 16384 on 32 warps
# capped at 32 registers 357.5 / 357.6 against 386.5-388.8 for the staged tile (Chan's merge:
# 384.7-385.6 in runs ZZS / ZZW). Not at 131072 (554.3 against ~400: three reads of 256 KB rows
# leave L2), nor 4-byte rows (not measured). A/B (run ZZZ, 3 rounds, medians, µs): 8192×32768 342.3 →
# 317.4, 4096×65536 386.1 → 351.0; 2048×131072, 4096×16384 and fp32 4096×65536 (unchanged) ±1 %.
# Without a residual only: three reads of x and the residual were not measured (the fused LayerNorm
# keeps the whole row / the staged tiles). (block_m, block_n, num_warps, max_registers)
_FWD_LAYER_NORM_CENTERED = {32768: (1, 8192, 16, 0), 65536: (1, 16384, 32, 32)}
# Backward, rows wider than _MAX_ONE_TILE_BWD on a GPU: split rows (kernels/backward.py), each
# part a whole-row-like tile held in registers by its own program, the parts of a row exchanging
# their partial sums. Every program must be resident (the parts wait on each other, so a program
# that is not resident would deadlock its group): the launcher fits the grid to the programs the
# compiled kernel leaves resident, the heuristic asks that the parts fit one an SM. Sweep (run E,
# 21 split configs on 4096×16384 … 2048×131072): parts of 2 rows × 8192 columns on 16 warps won every wide
# shape (8192×32768: 620 µs = 62 % against 881 for 1 row — each exchange costs a round trip
# through L2 while the SM idles, so two rows per exchange halve that cost; 4 × 4096: 720).
# N = 16384 stayed a whole row then (149 µs against 157 for the best split); since split parts
# prefetch (change 5) and pipeline their exchange (change 6), parts of 2 rows × 4096 on 8 warps
# (run ZI, tools/tune.py --split only, 4096×16384 bf16): fused add 172.2 µs against 202.7 for the
# whole row (which spills 308 B), RMSNorm 141.7 against 141-143 — _NARROW_SPLIT below. Its A/B
# (run ZJ, 2 rounds, 4096×16384 bf16): LayerNorm 208.4 → 160.4 µs, fused add 195.8 → 175.1,
# RMSNorm 141.9 → 140.3. The whole row remains where the parts of all heads cannot be resident.
_SPLIT_PART = 8192
# Run J (design change 5): with PREFETCH, parts of 1 row on 8 warps won (8192×32768: 606 µs against
# 682 for 2 rows × 16 warps without; 2048×131072: 691 against 756).
_SPLIT_ROWS = 1
_SPLIT_WARPS = 8
_SPLIT_PREFETCH = True
# 8192 < N ≤ 16384, and LayerNorm's rows of every width above, where the paired parts below do not
# fit: rows, part width, warps (prefetching parts; one program an SM). LayerNorm's 1 × 8192 part
# spills 68 B with 22 barriers (ptxas, sm_90; RMSNorm 16 B, 14); run ZZR's sweep (tools/tune.py
# --split only, bf16, µs): 4096×65536 2 × 4096 on 8 warps 689.1 (16 warps 686.0) against 814.5 for
# 1 × 8192; 2048×131072 720.0 against 820.5. The fused add keeps 1 × 8192 (4096×65536: 720.0
# against 766.2 for 2 × 4096).
_NARROW_SPLIT = (2, 4096, 8)
# 8-byte elements (and 4-byte ones where _PAIRED_SPLIT_4_BYTE's parts do not all fit): parts of one
# row × 16 KB of x on 16 warps. The 2-byte parts in fp32 (32
# KB of x a part, 32 values a thread of each of x, dy, the weight, the prefetched row and the
# dweight partial) spill to local memory: run ZZS/ZZT (fp32 bwd, µs) 1 × 8192 parts 13362-16388 at
# 8192×32768 / 4096×65536 for every family, LayerNorm's 2 × 4096 14872 at 8192×32768. Run ZZT's
# sweep (tools/tune.py --config, 7 parts): 1 × 4096 on 16 warps RMSNorm 975.4 (the best; 8192×32768
# 1030.8 against the best 965.9 for 2 × 2048 on 16), the fused add 1243.3 (best; 1245.2 against
# 1207.5), LayerNorm 1045.4 (best; 1110.5 against 1096.9 on 8 warps). fp64 (2048 columns) by
# analogy, not measured. (rows, part bytes, warps)
_SPLIT_WIDE_ELEMENTS = (1, 16384, 16)
# 2-byte rows: two programs an SM, each on 4 warps (what fits: ptxas, sm_90, 254-255 registers for
# 1 × 4096 and 2 × 2048 parts on 4 warps; the launcher fits the grid to what the compiled kernel
# leaves resident, so a build that fits one still runs). The split's candidates had all been one
# program an SM (8 warps waiting on the exchange); run ZZZE's sweep (tools/tune.py --config, bf16,
# µs): 2 × 2048 on 4 warps, 2 an SM — LayerNorm 8192×32768 587.2 against 638.1 for 2 × 4096 on 8,
# 4096×65536 604.3 against 688.9; RMSNorm 4096×16384 127.0 against 140.4; the fused add 8192×32768
# 706.9 against 720.3. 1 × 4096 on 4 warps, 2 an SM — RMSNorm 8192×32768 506.8 against 552.7 for 1 ×
# 8192 on 8 (2 × 2048: 529.0), 4096×65536 530.4 against 591.9 (548.0); LayerNorm 707.3 / 743.9.
# Run ZZZF's A/B (2 rounds, bf16, µs): LayerNorm 4096×16384 161.8 → 148.2, 8192×32768 631.8 → 578.1,
# 4096×65536 683.3 → 598.2, 2048×131072 709.5 → 617.9; RMSNorm 138.5 → 125.7, 550.6 → 502.3, 583.3
# → 523.3, 572.3 → 544.6; the fused add 171.3 → 164.3, 688.2 → 669.5, 710.9 → 694.5, but 2048×131072
# 709.3 → 755.8 (32 parts a row of 4096 columns): its rows wider than 65536 keep 1 × 8192 on 8 warps.
# (rows, part width, warps, programs an SM)
_PAIRED_SPLIT = (2, 2048, 4, 2, 0)
_PAIRED_SPLIT_RMS = (1, 4096, 4, 2, 0)
_PAIRED_SPLIT_RESIDUAL_MAX = 65536
# LayerNorm's bf16 rows of 32768 (no residual): 2 × 2048 on 8 warps capped at 128 registers, two an SM
# (16 warps an SM against the 4-warp parts' 8). Run ZZZG's sweep (tools/tune.py --config, µs):
# 8192×32768 543.2 against 580.7; at 4096×65536 629.9 against 598.7, so rows of 32768 only.
_PAIRED_SPLIT_LAYER_NORM_32768 = (2, 2048, 8, 2, 128)
# 4-byte rows: 8 KB of x a part (2048 fp32 columns) on 4 warps, two an SM (ptxas, sm_90: 226-245
# registers); the fused add's rows up to 16384 on 8 warps (123-127). Run ZZZG's sweep (fp32, µs,
# against 1 × 4096 on 16 warps, one an SM): 4096×16384 RMSNorm 235.1 (8 warps: 233.4) against 255.9,
# LayerNorm 239.9 against 260.7, the fused add 309.0 on 8 warps (317.3 on 4) against 311.4;
# 4096×65536 RMSNorm 942.0 against 985.1, LayerNorm 945.4 against 1055.2, the fused add 1233.7
# against 1244.3 (8 warps: 1313-1469). fp64 keeps _SPLIT_WIDE_ELEMENTS (not measured).
_PAIRED_SPLIT_4_BYTE = (1, 2048, 4, 2, 0)
_PAIRED_SPLIT_4_BYTE_RESIDUAL = (1, 2048, 8, 2, 0)
# Backward, whole rows: 8192-element tiles on 4 warps with 2 persistent programs per SM won
# every N from 128 to 4096 (16384×4096: 119 µs against 160 µs for 4096 on 8 warps, 4/SM):
# more bytes in flight per program hides HBM latency better than more, smaller programs.
_BWD_TILE_ELEMENTS = 8192
# N = 8192: two rows on 16 warps, 1 program per SM (247 µs against 258 for 2 per SM).
_BWD_WIDE_ROWS = 2
# Backward, whole rows of 1024 … 8192 with PREFETCH (design change 5, device run J, bf16, µs,
# against the best config without it in the same sweep): the next row block's loads in flight
# during this block's math. whole row: (block_m, num_warps, programs_per_sm). Since runs ZX-ZZ
# 2-byte rows stage their loads in shared memory instead (_BWD_ASYNC_2_BYTE, below): these tiles
# (and the two tables after) serve 4- and 8-byte elements, and the fused add's 2-byte rows of 8192.
_BWD_PREFETCH = {
    # 16384×1024: (4, 4, 2) 36.3 against 43.5 (run J); 2 rows, 4 an SM: RMSNorm 29.7 against 30.4
    # (run ZG's sweep), run ZK's A/B (3 rounds) 30.7 → 29.8, LayerNorm 31.9 → 32.0
    1024: (2, 4, 4),
    2048: (2, 8, 2),  # 16384×2048: 60.1 against 61.6; 4096×2048: 23.1 against 24.7
    4096: (2, 16, 1),  # 16384×4096: 108.0 against 139.7 (LayerNorm 113.6 / 175.8, fp32 202 / 224)
    8192: (1, 16, 1),  # 16384×8192: 206.1 against 256.6
}
# The fused-add backward (HAS_DRESIDUAL: a fourth (M, N) stream, dresidual_out) wants more
# programs with fewer bytes each: 1 row on half the warps, twice the programs per SM, at N = 4096
# (run M, 16384×4096 bf16: 137.9 µs against 143.2 for the plain RMSNorm choice) and N = 2048
# (run U, 16384×2048 bf16: 69.6 µs = 91 % of copy against 72.4 = 87 %). 1024 and 8192 not swept.
# N = 1024 (run ZG, tools/tune.py, 16384×1024 bf16): 2 rows on 4 warps, 4 per SM, 37.2 µs against
# 39.9 for the then plain choice (4 × 1024, 2/SM) — the plain choice since run ZK.
_BWD_PREFETCH_RESIDUAL = {2048: (1, 4, 4), 4096: (1, 8, 2)}
# The same with 4-byte elements at N = 4096: 1 × 4096 on 8 warps needs 168 registers (one program
# an SM); on 16 warps, 1 an SM: 253.5 µs against 280.2 (run ZL, tools/tune.py, fp32 16384×4096).
_BWD_PREFETCH_RESIDUAL_4_BYTE = {4096: (1, 16, 1)}
# Backward, whole rows of 2-byte elements (bf16 / fp16) at 1024 … 8192: no prefetch in registers;
# the row loop's loads staged 3 deep in shared memory instead (async_stages, Triton's software
# pipeliner: cp.async), two row blocks in flight a program against prefetch's one. Device runs
# ZX-ZY (tools/tune.py --async-stages, 16384 rows, µs, this tile against the prefetching
# heuristic of the same run): RMSNorm ×1024 28.0 / 29.6, ×2048 51.8 / 53.2, ×4096 99.9 / 103.3,
# ×8192 196.3 / 200.8; LayerNorm 29.0 / 30.8, 52.7 / 55.0, 102.1 / 105.6, 199.2 / 206.0; fused add
# 36.3 / 37.0, 68.1 / 68.7, 130.0 / 130.7, 256.9 / 257.2; 4096×2048 16.2 / 17.1. Two stages never
# won; four won some shapes by ≤ 1.6 µs and lost ×8192 by 20. ptxas gives the staged tiles more
# registers than prefetch's (LayerNorm 178-238 a thread, tools/ptx_stats.py): 2 programs an SM
# fit at 1024 and 2048 (RMSNorm ×2048 fits 3, and ran 54.5 µs on 3 against 51.8), one of 8 warps
# at 4096 and 8192. Not for 4-byte elements: fp32 ×4096 ran 201-207 against 198-201 prefetching.
# Run ZZ's A/B (3 rounds, 16384 rows): RMSNorm −2.1 … −6.2 µs, LayerNorm −2.6 … −7.5, fused add
# −0.7 / −1.0 at 2048 / 4096 — but +1.3 at 8192 (its sweep: −0.3), where the fused add keeps its
# prefetching tile (_BWD_ASYNC_RESIDUAL_MAX). GPUs before sm_80 have no cp.async: there the loop
# runs as written (correct, unpipelined; compiled for sm_70 / sm_75 on the CPU).
# whole row: (block_m, num_warps, programs_per_sm).
_BWD_ASYNC_2_BYTE = {128: (16, 1, 4), 256: (8, 1, 4),
                     1024: (4, 4, 2), 2048: (2, 4, 2), 4096: (2, 8, 1), 8192: (1, 8, 1)}
_BWD_ASYNC_STAGES = 3
_BWD_ASYNC_RESIDUAL_MAX = 4096
# Short rows (QK-norm heads of 128 and 256) stage too, on one warp: 2048 elements a program and 4
# programs an SM for RMSNorm (run ZZE's sweep, tools/tune.py --block-m 8,16,32 --warps 1,2,4 --ppsm
# 4,8 --async-stages 3,4, bf16 µs: 524288×128 16 × 128 on 1 warp, 4/SM, 3 stages 101.5 against
# 113.8 for the unstaged _BWD_SHORT_ROWS tile; 262144×256 8 × 256 101.2 against 156.5 for the
# generic 32 × 256 on 4 warps). LayerNorm (more registers a row) wants half the rows and twice the
# programs: 8 × 128, 8/SM 107.9 against 121.6 for RMSNorm's tile and 135.5 for the heuristic then;
# the fused add 2 warps: 16 × 128 130.6 against 133.1 on 1 warp and 171.4 for the generic tile.
# Rows of 256 for LayerNorm and the fused add: the same elements a program, by analogy. Run ZZF's
# A/B (2 rounds, bf16, µs, against main before): RMSNorm 524288×128 114.3 → 101.2, 262144×256
# 155.6 → 101.3; LayerNorm 135.9 → 104.0, 223.7 → 102.3; fused add 170.2 → 131.7, 182.3 → 135.7.
_BWD_ASYNC_LAYER_NORM = {128: (8, 1, 8), 256: (4, 1, 8)}
_BWD_ASYNC_RESIDUAL = {128: (16, 2, 4), 256: (8, 2, 4)}
# 4-byte rows of 4096 (RMSNorm and LayerNorm; not the fused add): one row on 8 warps, 2 an SM,
# neither prefetch nor staging (ptxas: 108 / 128 registers against prefetch's 159-172, which fit
# one an SM). Run ZY's sweep (fp32 16384×4096): RMSNorm 191.7 µs against the heuristic's 201.2,
# LayerNorm 194.8 against 198.3; run ZZD's A/B (3 rounds): RMSNorm 200.3 → 191.9, LayerNorm
# 196.9 → 195.2. whole row: (block_m, num_warps, programs_per_sm).
_BWD_PLAIN_4_BYTE = {4096: (1, 8, 2)}
# Σ(g·h) and Σg in one reduction tree (JOIN_SUMS) only for one-row tiles: device run ZF (A/B,
# 3 rounds, bf16 unless said, µs) — 1 × 8192 on 16 warps: fused add 270.0 → 255.8, LayerNorm
# 210.0 → 205.2, RMSNorm 203.0 → 201.8; fused add 1 × 4096 on 8 warps 132.8 → 129.4, 1 × 2048 on
# 4 warps 68.5 → 68.0. Tiles of several rows did not gain alike: LayerNorm 2 × 4096 bf16
# 107.1 → 125.8, RMSNorm 4 × 1024 30.8 → 33.5, 2 × 2048 and RMSNorm 2 × 4096 unchanged — but
# LayerNorm fp32 2 × 4096 204.4 → 197.4 (run ZG's sweep: 204.1 → 197.2, the best of 72 tiles), so
# 4-byte elements join at the widths in _JOIN_SUMS_WIDE_ELEMENTS too. (The kernel joins only for
# LayerNorm: RMSNorm needs no Σg.)
_JOIN_SUMS_ROWS = 1
_JOIN_SUMS_WIDE_ELEMENTS = (4096,)
# QK-norm rows of 128 (run N, tools/tune.py, 524288×128 bf16): 32 rows on 2 warps with 4
# programs per SM, 130.3 µs against 140.7 for the generic 64 × 128 on 4 warps, 2/SM (run P side
# by side: 133 against torch.compile's 141). Only without dresidual_out: ptxas shows the tile
# spilling ~1.4 KB plain and ~10 KB with bias and dresidual_out, which was not timed.
_BWD_SHORT_ROWS = {128: (32, 2, 4)}  # whole row: (block_m, num_warps, programs_per_sm)
# Prefetch is not for rows of 128 (524288×128: 162.7 against 140.7; 64-row tiles are latency-hidden already)
# nor 16384 (a second row in registers spills: 333.6 against 175.7).
# Forward, whole rows: ≥ 4096-element tiles; warps so each thread holds ~16 values.
_FWD_TILE_ELEMENTS = 4096
# LayerNorm's forward has two dependent row reductions (the mean, then the centred variance), each
# a block-wide synchronisation; it wants fewer threads a row than RMSNorm's single one (run S,
# tools/tune.py --kind fwd --family layer_norm, bf16). Whole row: (block_m, num_warps).
_FWD_LAYER_NORM = {
    1024: (2, 4),  # 16384×1024: 19.4 µs against 21.0 for RMSNorm's 4 rows on 8 warps
    8192: (1, 8),  # 16384×8192: 131.7 µs (97 %) against 147.8 on 16 warps
}
# LayerNorm's forward of 4-byte elements at N = 4096: 2 rows on 16 warps (run ZU's sweep, statistics
# stored: 130.2 µs against 133.5 for 1 × 4096 on 8 warps; run ZT's A/B, 3 rounds: 133.7 → 130.7).
# Not for 2-byte elements: there the same tile ran 73-75 µs against 68.5 (run ZT).
_FWD_LAYER_NORM_4_BYTE = {4096: (2, 16)}
# Every family at N = 2048 (run ZB, tools/tune.py --kind fwd, bf16 16384×2048): one row a program
# on 4 warps against the rule's 2 rows on 8 — LayerNorm 34.5 against 36.7 µs, the fused add 65.3
# against 66.6 (best 65.2 on 8 warps), RMSNorm 34.4 against 34.9. Side by side with the old tile
# (run ZD, 3 rounds): LayerNorm 38.7 → 36.2, fused add 68.1 → 66.8, RMSNorm 35.8 → 35.2; 4096×2048
# LayerNorm 11.2 → 10.4. Whole row: (block_m, num_warps).
_FWD_ROWS = {2048: (1, 4)}
# Whole rows of ≥ 4096 re-read for y (reload: the statistics pass loads with evict_last, the output
# pass reads the row again from L2 with evict_first), so the row need not stay live across the
# reduction — fewer registers, more rows in flight an SM, as torch.compile's kernels do (run ZZK).
# Sweeps, bf16 unless said, µs, kept tile → reload (runs ZZM / ZZN): RMSNorm 16384×4096 67.6 →
# 65.6, fp16 67.7 → 65.7, fp32 133.0 → 127.6 (16 warps), 16384×8192 130.7 → 128.0, 131072×8192
# 1160 → 1121, 4096×16384 71.0 → 67.7 and 8192×32768 295 → 259 (with the cap below); the fused
# add ×4096 133.6 → 128.0 (16 warps), ×8192 263 → 255, 4096×16384 133 → 131; LayerNorm ×4096
# 67.7 → 66.5, ×8192 131.5 → 130.6, 4096×16384 112.7 → 73.2. Not below 4096 (rows of 2048: ±0.3,
# LayerNorm +1.1), nor LayerNorm fp32 ×4096 (2 × 4096 tile: 131.4 → 133.0) or ×32768 (±1.5).
_FWD_RELOAD_MIN = 4096
# RMSNorm rows of 4096 that load 16 KB (the fused add's two bf16 rows, fp32): 16 warps (above).
_FWD_RELOAD_4096_WIDE_WARPS = 16
# ptxas' register cap for plain 2-byte RMSNorm rows of ≥ 16384 re-read: 1 × 32768 on 32 warps
# 38 → 32 registers without spills (1 → 2 programs an SM: 8192×32768 302 → 259 µs), 1 × 16384 on
# 16 warps 50 → 32, 16 B spilled (2 → 4: 4096×16384 71.6 → 67.7). The fused add and LayerNorm
# hold more (57-64 registers re-reading) and spill under it: 4096×16384 fused add 130 → 379.
_FWD_RELOAD_CAP = 32
_FWD_RELOAD_CAP_MIN = 16384
_MAX_BLOCK_M = 64  # QK-norm rows of 128: 64 rows a tile won the backward (156 µs vs 240 for 32)
# Interpreter (CPU): every program is a Python loop iteration of numpy ops on whole tiles, so the
# fewer and larger the programs, the faster; registers do not exist there.
_INTERPRET_TILE_ELEMENTS = 65536


def next_power_of_2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _num_warps(tile_elements: int, cap: int = 16) -> int:
    # ~16 elements a thread: enough independent 16-byte loads in flight, few enough registers.
    return max(1, min(cap, tile_elements // 512))


def _staged_tile(whole: int, residual: bool, layer_norm: bool) -> Optional[tuple]:
    """(block_m, num_warps, programs_per_sm) of the staged whole-row backward tile for 2-byte rows
    of `whole`, or None where rows of that width prefetch (or take the generic tile) instead."""
    if residual:
        if whole in _BWD_ASYNC_RESIDUAL:
            return _BWD_ASYNC_RESIDUAL[whole]
        if whole > _BWD_ASYNC_RESIDUAL_MAX:
            return None
    elif layer_norm and whole in _BWD_ASYNC_LAYER_NORM:
        return _BWD_ASYNC_LAYER_NORM[whole]
    return _BWD_ASYNC_2_BYTE.get(whole)


def _split_parts(whole: int, residual: bool, layer_norm: bool, element_size: int) -> tuple:
    """The backward's split parts (rows, part width, warps, programs an SM, register cap) for a row of `whole`
    (N rounded up to a power of two) columns, best first: the heuristic takes the first whose parts
    all fit one an SM (parts·heads ≤ multiprocessors)."""
    if element_size > 2:
        rows, part_bytes, warps = _SPLIT_WIDE_ELEMENTS
        sixteen_kb = (rows, part_bytes // element_size, warps, 1, 0)
        if element_size > 4:
            return (sixteen_kb,)
        paired = (_PAIRED_SPLIT_4_BYTE_RESIDUAL if residual and whole <= _MAX_ONE_TILE_BWD
                  else _PAIRED_SPLIT_4_BYTE)
        return (paired, sixteen_kb)
    wide = (_SPLIT_ROWS, _SPLIT_PART, _SPLIT_WARPS, 1, 0)
    narrow = _NARROW_SPLIT + (1, 0)
    if whole <= _MAX_ONE_TILE_BWD:
        return (_PAIRED_SPLIT, narrow)
    if layer_norm:
        first = _PAIRED_SPLIT_LAYER_NORM_32768 if whole == 32768 and not residual else _PAIRED_SPLIT
        return (first, narrow, wide)
    if residual and whole > _PAIRED_SPLIT_RESIDUAL_MAX:
        return (wide,)
    return (_PAIRED_SPLIT_RMS, wide)


def _prefetch_tile(whole: int, residual: bool, element_size: int) -> tuple:
    """(block_m, num_warps, programs_per_sm) of the prefetching whole-row backward tile for rows
    of `whole` (a width in _BWD_PREFETCH): from the most specific table that has the width."""
    for table, applies in ((_BWD_PREFETCH_RESIDUAL_4_BYTE, residual and element_size == 4),
                           (_BWD_PREFETCH_RESIDUAL, residual)):
        if applies and whole in table:
            return table[whole]
    return _BWD_PREFETCH[whole]


@functools.lru_cache(maxsize=None)
def tile_config(n: int, backward: bool, interpret: bool, heads: int = 1, multiprocessors: int = 0,
                residual: bool = False, layer_norm: bool = False, element_size: int = 2,
                vector_aligned: bool = True) -> TileConfig:
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
    RMSNorm rows of ≥ 16384 under a register cap (max_registers, _FWD_RELOAD_CAP). LayerNorm's bf16
    rows of 32768 / 65536 without a residual: column tiles read three times (_FWD_LAYER_NORM_CENTERED).
    Rows wider than 32768: LayerNorm's forward on staged 16 KB column tiles (_FWD_LAYER_NORM_COLUMNS),
    RMSNorm's on 16384-column tiles; the fused add's rows of more than 64 KB (fp32 32768 too) split
    across programs in 8 KB parts (_FWD_SPLIT_RESIDUAL, _FWD_SPLIT_MIN_BYTES), RMSNorm's fp32 rows of
    65536 / 131072 in 32 parts (_FWD_SPLIT_RMS_4_BYTE);
    the backward's split parts hold 8-16 KB of a row (_PAIRED_SPLIT: 2-byte rows on two programs an SM,
    _PAIRED_SPLIT_4_BYTE: 4-byte rows likewise, _NARROW_SPLIT, _SPLIT_PART, _SPLIT_WIDE_ELEMENTS).
    vector_aligned: the backward's rows load as 16-byte vectors (N and every row stride multiples
    of 16 elements, unit column strides, 16-byte aligned pointers: what a launch specialises).
    Staging needs it — cp.async copies 4-16 bytes, so Triton's pipeliner leaves scalar 2-byte
    loads as written (ptxas, LayerNorm 2 × 2048 with N and strides not multiples of 16: 80 scalar
    loads, no cp.async of x or dy) — so rows that are not keep the prefetching tile.
    """
    whole = next_power_of_2(n)
    if interpret:
        block_n = min(whole, _INTERPRET_TILE_ELEMENTS)
        return TileConfig(block_m=max(1, _INTERPRET_TILE_ELEMENTS // block_n), block_n=block_n,
                          one_tile=block_n >= n)
    if backward:
        staged = _staged_tile(whole, residual, layer_norm) if element_size == 2 and vector_aligned else None
        if staged:
            block_m, warps, per_sm = staged
            return TileConfig(block_m, whole, True, num_warps=warps, programs_per_sm=per_sm,
                              async_stages=_BWD_ASYNC_STAGES)
        if element_size == 4 and whole in _BWD_PLAIN_4_BYTE and not residual:
            block_m, warps, per_sm = _BWD_PLAIN_4_BYTE[whole]
            return TileConfig(block_m, whole, True, num_warps=warps, programs_per_sm=per_sm)
        if whole in _BWD_PREFETCH:
            block_m, warps, per_sm = _prefetch_tile(whole, residual, element_size)
            return TileConfig(block_m, whole, True, num_warps=warps, programs_per_sm=per_sm, prefetch=True,
                              joined_sums=block_m == _JOIN_SUMS_ROWS
                              or (element_size == 4 and whole in _JOIN_SUMS_WIDE_ELEMENTS))
        if whole in _BWD_SHORT_ROWS and not residual:
            block_m, warps, per_sm = _BWD_SHORT_ROWS[whole]
            return TileConfig(block_m, whole, True, num_warps=warps, programs_per_sm=per_sm)
        if whole <= _BWD_TILE_ELEMENTS // 2:
            block_m = min(_MAX_BLOCK_M, _BWD_TILE_ELEMENTS // whole)
            return TileConfig(block_m, whole, True, num_warps=4, programs_per_sm=2)
        if whole <= _MAX_ONE_TILE_BWD // 2:
            return TileConfig(_BWD_WIDE_ROWS, whole, True, num_warps=16, programs_per_sm=1)
        narrow = whole <= _MAX_ONE_TILE_BWD
        for rows, part, warps, per_sm, cap in _split_parts(whole, residual, layer_norm, element_size):
            if cdiv(n, part) * heads <= multiprocessors:
                return TileConfig(rows, part, True, num_warps=warps, programs_per_sm=per_sm, split=True,
                                  prefetch=_SPLIT_PREFETCH, max_registers=cap)
        if narrow:
            return TileConfig(1, whole, True, num_warps=8, programs_per_sm=1)
        return TileConfig(_COLUMN_TILE_ROWS, _COLUMN_TILE, False, num_warps=16, programs_per_sm=2)
    if layer_norm and element_size == 4 and whole in _FWD_LAYER_NORM_4_BYTE:
        block_m, warps = _FWD_LAYER_NORM_4_BYTE[whole]
        return TileConfig(block_m, whole, True, warps)
    if layer_norm and element_size == 2 and not residual and whole in _FWD_LAYER_NORM_CENTERED:
        block_m, block_n, warps, cap = _FWD_LAYER_NORM_CENTERED[whole]
        return TileConfig(block_m, block_n, False, warps, centered_pass=True, max_registers=cap)
    if whole > _MAX_ONE_TILE_FWD and layer_norm:
        block_m, tile_bytes, warps, stages = _FWD_LAYER_NORM_COLUMNS
        return TileConfig(block_m, tile_bytes // element_size, False, warps, column_stages=stages)
    block_m, part_bytes, warps, per_sm = _FWD_SPLIT_RESIDUAL
    block_n = part_bytes // element_size
    if (residual and not layer_norm and heads == 1 and whole * element_size > _FWD_SPLIT_MIN_BYTES
            and cdiv(n, block_n) <= multiprocessors):  # resident even at 1 an SM
        return TileConfig(block_m, block_n, True, warps, programs_per_sm=per_sm, split=True)
    if (not (residual or layer_norm) and heads == 1 and element_size == 4 and whole in _FWD_SPLIT_RMS_4_BYTE
            and cdiv(n, _FWD_SPLIT_RMS_4_BYTE[whole][1]) <= multiprocessors):
        block_m, block_n, warps, per_sm = _FWD_SPLIT_RMS_4_BYTE[whole]
        return TileConfig(block_m, block_n, True, warps, programs_per_sm=per_sm, split=True)
    if whole > _MAX_ONE_TILE_FWD:
        return TileConfig(1, _FWD_COLUMN_TILE, False, num_warps=32)
    reload = whole >= _FWD_RELOAD_MIN and not (layer_norm and whole == _MAX_ONE_TILE_FWD)
    if layer_norm and whole in _FWD_LAYER_NORM:
        block_m, warps = _FWD_LAYER_NORM[whole]
        return TileConfig(block_m, whole, True, warps, reload=reload)
    if whole in _FWD_ROWS:
        block_m, warps = _FWD_ROWS[whole]
        return TileConfig(block_m, whole, True, warps)
    block_m = max(1, min(_MAX_BLOCK_M, _FWD_TILE_ELEMENTS // whole))
    # 32 warps only where the row needs them to stay in registers (32768: 52 registers kept).
    warps = _num_warps(block_m * whole, cap=32 if whole > 16384 else 16)
    if reload and whole == _FWD_RELOAD_MIN and not layer_norm and (residual or element_size == 4):
        warps = _FWD_RELOAD_4096_WIDE_WARPS
    capped = reload and whole >= _FWD_RELOAD_CAP_MIN and not (layer_norm or residual) and element_size == 2
    return TileConfig(block_m, whole, True, warps, reload=reload, max_registers=_FWD_RELOAD_CAP if capped else 0)


def fit_block_m(config: TileConfig, m: int) -> TileConfig:
    """Shrink BLOCK_M to the number of rows (a power of two) so tiny M wastes no lanes."""
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

    resident: how many programs of the compiled kernel fit on a multiprocessor
    (`resident_programs`); None: as many as the config asks. The rows are dealt to the programs
    in a fixed cycle, so a program that is not resident starts only when another has finished all
    its rows: asking for more programs an SM than fit runs the kernel in two waves (device run
    ZK: LayerNorm fp32 16384×4096 on 1 × 4096 tiles, 2 asked and 1 fitting, 211.8 µs against 197)."""
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


# The dweight finisher on a GPU sums G partial rows (the persistent programs: 33-528 on an H200;
# L2-resident, just written). It is
# latency-bound: a program walking G rows BLOCK_G at a time pays one L2 round trip per step.
# tools/time_finisher.py (run Q, H200): 32 × 128 tiles (9 dependent steps for G = 264, N/128
# programs) took 6.2-6.4 µs for G = 264 and 4.0 µs for G = 132; all G rows in one step on 16-column
# strips (N/16 programs) 1.8-2.1 µs, within 0.1-0.2 µs of the best of 60 tiles on every shape.
_FINISH_COLUMNS = 16
_FINISH_MAX_ROWS = 512  # 512 × 16 fp32 = 64 values a thread on 4 warps; more rows take more steps


@functools.lru_cache(maxsize=None)
def finish_config(interpret: bool, rows: int) -> TileConfig:
    """The dweight finisher's tile for `rows` (= G) partial rows: block_m partial rows × block_n
    columns per step. GPU: every row in one step where G ≤ 512, on 16-column strips. Interpreter:
    one wide tile (each program is a Python loop iteration there)."""
    if interpret:
        return TileConfig(block_m=8, block_n=8192, one_tile=False)
    block_g = min(_FINISH_MAX_ROWS, next_power_of_2(rows))
    return TileConfig(block_m=block_g, block_n=_FINISH_COLUMNS, one_tile=False,
                      num_warps=max(1, min(4, block_g * _FINISH_COLUMNS // 1024)))
