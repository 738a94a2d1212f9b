"""The forward's launch heuristics: measured tables (tools/tune.py on an H200, BENCHMARKS.md; each
constant with the measurement beside it) and `forward_tile`, the forward half of `tile_config`."""

from .tile import _MAX_BLOCK_M, TileConfig, cdiv

# Widest row kept whole in registers: only x lives across the reduction; 32768 values over 32 warps
# is 32 registers a thread (ptxas: 52 registers, no spills; re-read for y under _FWD_RELOAD_CAP: 32).
_MAX_ONE_TILE_FWD = 32768
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
# tiles' 309.0) nor LayerNorm (523.3 against 444.0) without a residual in these parts: they split in
# 16 KB parts of their own (_FWD_SPLIT_RMS, _FWD_SPLIT_LAYER_NORM, below). A part is 8 KB of x: fp32 2048 columns (run
# ZZS, fp32 4096×65536: 1203.4 against 1320.0 for 4096 and 1425.3 for the column tiles; fp64 1024
# by analogy, not measured). The fused LayerNorm's rows wider than _MAX_ONE_TILE_FWD take the same
# parts (session 23, runs ZZZZS / ZZZZT, tools/tune.py --residual, µs, against its staged column
# tiles): bf16 4096×65536 687.9 against 759.2 (16 KB parts on 4 capped: 742.7), 2048×131072 696.1
# against 803.4 (728.9), 1024×262144 725.7 against 841.6; fp32 1 × 2048 4096×65536 1296.2 against
# 1544.8 (1 × 4096 on 8: 1364.6, on 4 capped: 1502.9), 2048×131072 1329.1 against 1609.5; bf16 x with
# an fp32 residual 4096×65536 991.4 against 1176.4 (1 × 2048: 1068.1). Not its whole rows of 32768
# (fp32 8192×32768 1042.1 whole against 1282.7 split; bf16 554.0 against 674.5); fp64 by analogy.
# (block_m, part bytes, num_warps, programs_per_sm)
_FWD_SPLIT_RESIDUAL = (1, 8192, 8, 4)
# The split takes the fused add's rows of more than 64 KB (bf16 rows wider than 32768, fp32 rows of
# 32768: a whole fp32 row re-read for y spills 80 B). Run ZZZ's sweep (fp32 8192×32768, µs): 8 KB
# parts 1261.2 against 1379.2 for the whole row (16 KB parts 1418.0; 2 programs an SM 1764.0).
_FWD_SPLIT_MIN_BYTES = 65536
# Design change 30 (config/backward.py): the fused add's 2-byte rows in 1 × 2048 parts on 4 warps,
# eight an SM asked (the launcher fits what their shared memory allows), their loads staged 3 deep
# (cp.async; the exchange's wait spins in PTX). Runs ZZZZZC sweep2 / sweep3 (bf16, µs, against the 8 KB
# parts): 4096×65536 579.5 against 604.9, 2048×131072 576.3 against 607.5, 1024×262144 580.7 against
# 600.4 (RMSNorm's and LayerNorm's split forwards lost staged: RMSNorm 2048×131072 309.5-353.2 against
# 305.1, LayerNorm 397.8-480.2 against 354.4). fp32 rows and the fused LayerNorm: not measured then.
# Session 25 (runs ZZZZZD / ZZZZZE sweeps, µs, against the heuristic then in the same process): the
# staged parts hold the previous row block in registers across the exchange (reload False) instead of
# re-reading it from L2 — only the first read is staged then (the pipeliner had issued the re-read with
# it, both from DRAM) — and take every fused row that splits: the fused add bf16 4096×65536 549.8
# against 586.5 re-reading, 2048×131072 532.0 / 574.8; fp32 (1 × 1024) 1070.1 / 1184.9, 1061.1 /
# 1229.5; bf16 x with an fp32 residual (1 × 1024) 818.9 / 952.6, 817.6 / 932.5 (1 × 2048 845.8 / 820.8);
# the fused LayerNorm bf16 662.2 / 687.5, 623.3 / 702.0, fp32 1153.7 / 1310.1 (1 × 2048 on 4: 1198.4).
# A part is 4 KB of the wider of x and the residual. Four deep: ±3 %. RMSNorm's split forward lost held
# (2048×131072 1 × 4096 on 4 333.0, 1 × 2048 staged 323.6 against 296.5 for its 16 KB parts).
# (block_m, part bytes, num_warps, programs an SM, stages)
_FWD_SPLIT_RESIDUAL_STAGED = (1, 4096, 4, 8, 3)
# RMSNorm's rows of 128 KB and more without a residual split too (the column tiles reach 63-73 %), in
# parts of 16 KB of the wider of x and y, four an SM: 2-byte parts (1 × 8192; 1 × 4096 for a 4-byte
# y) on 4 warps, fp32 ones (1 × 4096) on 8. Run ZZZZL's sweep (tools/tune.py --kind fwd --config,
# bf16, µs): 2048×131072 1 × 8192 on 8 warps, 3 an SM, 315.0 against the column tiles' 348.1 (1 ×
# 32768 on 32, one an SM: 349.8; 1 × 16384 on 16, 2 an SM: 426.8), 1024×262144 325.3 against 381.6
# (358.9; 424.0); run ZZZZM's A/B of that part (`ab`, 2 rounds, µs): bf16 2048×131072 349.6 → 317.1,
# 1024×262144 381.3 → 336.0, fp16 2048×131072 348.4 → 308.8 (the control 4096×65536 ±0.2). Run ZZZZM's
# sweeps (`ab`, `checks`): on 4 warps, 4 an SM, 2048×131072 296.5 against 310.6, 1024×262144 292.8
# against 322.7; fp32 1 × 4096 on 8 warps, 4 an SM, 4096×65536 578.3 against 598.3 three an SM and
# run ZZZI's 1 × 2048 on 4 (676.3; A/B of three an SM, 2 rounds: 674.6 → 603.8), 2048×131072 582.0
# against 620.6 and 1 × 4096 two an SM (766.2; A/B of three an SM: 729.7 → 631.2); bf16 x with a
# 4-byte y (out_dtype fp32) in 1 × 4096 parts on 4 warps, 4 an SM: 4096×65536 479.5 against 483.9
# on 8 warps and the column tiles' 604.8, 2048×131072 489.7 against 572.4 and 640.0, 8192×32768 481.0
# against 484.6 on 8 warps and the uncapped whole row's 516.4, 1024×262144 529.6 against 552.6 on 8
# warps and the column tiles' 686.4 (`verify`). Session 14's 1 × 4096 parts of bf16 x and y on 8
# warps, 4 an SM, ran 398-415 at 131072. Not the 2-byte rows of 65536 with a 2-byte y (whole rows, below), nor LayerNorm
# (2048×131072 532.1 against its staged tiles' 384.0). fp32 x with a 2-byte y takes fp32's parts
# (measured at 262144 only: below). {(x's element size, y's): {whole: (block_m, block_n, num_warps, programs_per_sm,
# max_registers)}}
# ... and its 4-byte rows of 262144 (run ZZZZZZI `scan`, tools/tune.py, µs): fp32 1024×262144 591.1 against the
# column tiles' 793.7 (held weight 534.3: _FWD_SPLIT_HOLD_WEIGHT), fp32 x with a bf16 y 436.2 against 626.9.
_FWD_SPLIT_RMS_4_BYTE = {whole: (1, 4096, 8, 4, 0) for whole in (65536, 131072, 262144)}
_FWD_SPLIT_RMS = {
    (4, 4): _FWD_SPLIT_RMS_4_BYTE,
    (4, 2): _FWD_SPLIT_RMS_4_BYTE,
    (2, 2): {whole: (1, 8192, 4, 4, 0) for whole in (131072, 262144)},
    (2, 4): {whole: (1, 4096, 4, 4, 0) for whole in (65536, 131072, 262144)},
}
# ... but its rows of 32768 (2-byte x, 4-byte y) walk 16384-column tiles on 16 warps, two reads (the second from
# L2: 132 rows of 64 KB in flight), as torch.compile's looped reduction does (tools/out_dtype_peer.py: 400.2 µs
# at bf16 8192×32768 against the split parts' 421.6). Run ZZZZZZH `sweep32` (tools/tune.py, every candidate, µs):
# bf16 393.3 against the held split parts' 422.5 (the whole row on 16 warps 400.1, 1 × 8192 tiles 409.4); fp16
# 395.8 against 424.9. Since the split parts landed (run ZZZZM: 481.0 against the uncapped whole row's 516.4) the
# column path gained its snake and L2 hints. Several weight heads too (the same bytes; they did not split).
# (block_m, block_n, num_warps)
_FWD_COLUMNS_RMS_4_BYTE_Y = {32768: (1, 16384, 16)}
# LayerNorm's rows of 256-512 KB without a residual (one weight head: bf16 131072 / 262144, fp32 65536 /
# 131072) split too, in parts of 16 KB of x on 4 warps, four an SM under a 128-register cap (ptxas, sm_90,
# bf16 1 × 8192: 135 registers uncapped, so only three fit). Nsight Compute (run ZZZZN, bf16 2048×131072):
# the parts read the minimum 541 MB against the staged tiles' 1.01 GB, but three an SM issue at 17.7 %
# achieved occupancy (long-scoreboard stalls) — 407 µs against 376. Sweeps (tools/tune.py --kind fwd
# --config, µs, against the staged column tiles in the same process): run ZZZZO bf16 2048×131072 348.4
# capped against 402.6 uncapped and 384.5 staged, 1024×262144 339.4 against 337.6 and 401.9 (run ZZZZN:
# 338.9; 1 × 4096 on 4: 508.9; 1 × 8192 on 8, 3 an SM: 401.5), fp32 1 × 4096 4096×65536 638.6 against
# 639.1 uncapped, 728.2 on 8 warps and 762.7 staged. Not bf16 rows of 65536 with a 2-byte y (349.1
# against the three-read tiles' 350.7), nor a residual (the fused LayerNorm: the fused add's parts,
# _FWD_SPLIT_RESIDUAL). A/B (run ZZZZP, 2 rounds, µs): bf16 2048×131072 385.0 → 349.4, 1024×262144
# 406.1 → 338.3, fp32 4096×65536 764.7 → 632.4 (the control, bf16 4096×65536, ±0.4). Run ZZZZP's sweeps: fp32 2048×131072 606.2 against the staged 785.9 (8 warps: 703.2);
# bf16 x with a 4-byte y in the same 1 × 8192 parts (32 KB of y) 2048×131072 461.8 against the staged
# 551.0 and 1 × 4096 parts' 494.5, 1024×262144 445.2 against 562.3 and 592.7. Run ZZZZS's / ZZZZT's
# sweeps (session 23) took the fp32 rows of 262144
# (1024×262144 648.8 against the staged 799.8; 8 warps 1051.2) and fp32 x with a 2-byte y in the same
# 1 × 4096 parts (4096×65536 504.1 against 610.4, 2048×131072 512.3 against 633.4, 1024×262144 547.7
# against 649.4); run ZZZZU's, bf16 x with a 4-byte y at 65536 too (4096×65536 446.9 against the
# three-read tiles' 476.2; 1 × 4096 parts 554.2). Not bf16 rows of 32768 (8192×32768 356.5 against the
# three-read tiles' 318.8; run ZZZZZK, since design change 32's paired wait: 329.7 against 318.5), nor
# 16384 (4096×16384 89.4 against the whole row's 72.0). Since run ZZZZZK (session 28) bf16 x with a
# 2-byte y at 65536 too: 4096×65536 323.0 against the three-read tiles' 352.4 (1 × 4096 parts 380.4) —
# before design change 32 they tied (349.1 against 350.7).
# {(x's element size, y's): {whole: (block_m, block_n, num_warps, programs_per_sm, max_registers)}}
_FWD_SPLIT_LAYER_NORM_2_BYTE = {whole: (1, 8192, 4, 4, 128) for whole in (65536, 131072, 262144)}
_FWD_SPLIT_LAYER_NORM_4_BYTE = {whole: (1, 4096, 4, 4, 128) for whole in (65536, 131072, 262144)}
_FWD_SPLIT_LAYER_NORM = {
    (2, 2): _FWD_SPLIT_LAYER_NORM_2_BYTE,
    (2, 4): {whole: (1, 8192, 4, 4, 128) for whole in (65536, 131072, 262144)},
    (4, 4): _FWD_SPLIT_LAYER_NORM_4_BYTE,
    (4, 2): _FWD_SPLIT_LAYER_NORM_4_BYTE,
}
# The split forward is bound by its traffic through L2 (run ZZZZZZB, Nsight Compute, LayerNorm bf16
# 2048×131072: L1's reads from L2 2.4× x's bytes — a part re-reads x and its columns of the weight and bias
# every row block): without weight and bias it ran 279 µs against 318 (fp32 4096×65536 542 against 592). Where a part's weight and bias fit in registers beside its row block they are loaded once
# and held (HOLD_WEIGHT): LayerNorm's 4-byte parts (1 × 4096 on 4, 32 columns a thread; ptxas, sm_90: 128
# registers under the cap, 0 B spilled with a 4-byte y, 12 B with a 2-byte one). Run ZZZZZZC's A/B (2 rounds,
# µs): fp32 4096×65536 589.9 / 588.8 → 543.6 / 546.2, 2048×131072 587.9 / 585.8 → 547.6 / 540.6, 1024×262144
# 641.4 / 641.9 → 558.5 / 555.6 (the control, bf16 2048×131072, ±1 %); fp32 x with a bf16 y 4096×65536
# 455.4 / 454.6 → 435.6 / 437.2 (as the heuristic, run ZZZZZZC `y16`: 437.6; 2048×131072 466.0 / 464.1 → 431.1 /
# 431.8, 1024×262144 509.9 / 512.9 → 435.5 / 435.1). Not the 2-byte parts (run ZZZZZZB: 1 × 8192 held spills
# 404 B, 524.6 against 316.4-321.6; held in 1 × 4096 parts 352.5), nor RMSNorm (bf16 2048×131072 at 168
# registers, three an SM: 284.8 / 283.5 → 280.1 / 280.1; fp32 4096×65536 at 78, three an SM: 563.5 / 567.8 →
# 594.4 / 598.8) — nor L1 (the weight's loads L1::evict_last: ±1 %; x past L1, .cg without L2 hints: +10-17 %).
# Held 2-byte values spilled while LLVM hoisted their upcast out of the row loop (holding them as float32);
# converted at their use by a non-pure asm (kernels/convert.upcast_held) and loaded in x's tile layout, they
# fit: RMSNorm's 2-byte 1 × 8192 parts on 4 hold their weight in 126 registers (bf16; fp16 119), four an SM.
# Run ZZZZZZG's A/B (session 38, 2 rounds, µs, HEAD → held): bf16 2048×131072 282.2 / 282.8 → 273.8 / 273.5,
# 1024×262144 280.4 / 281.2 → 272.6 / 272.3 (−3 %, 94 % of copy); fp16 313.5 / 308.7 → 271.0 / 271.8,
# 314.8 / 315.4 → 272.9 / 270.8 (−13 %); LayerNorm fp32 and the bf16 control ±0.5 %. Not LayerNorm's
# 2-byte parts (run ZZZZZZE: 1 × 8192 held at 168 registers, three an SM, −1 to −2 %: 318.4 → 314.8 at
# 2048×131072; at 128 it spills 360 B; the weight alone, 12 B spilled at 128, four an SM: +1 to +2 %, run ZZZZZZH
# `holdw`), nor the fused forwards' staged parts (the fused add 541.4 → 530.7 / 534.4 → 538.4, the fused LayerNorm
# 549.2 → 561.9 / 552.6 → 543.0). RMSNorm's 2-byte x with a 4-byte y (1 × 4096 parts on 4, four an SM) holds its
# weight too: run ZZZZZZH `y32` (tools/tune.py, 2 rounds, heuristic → held, µs) bf16 4096×65536 428.5 / 425.7 →
# 420.7 / 422.5, 2048×131072 432.9 / 437.7 → 423.3 / 421.9, 1024×262144 451.8 / 450.1 → 433.4 / 431.6; fp16
# 427.6 / 427.0 → 422.0 / 422.1, 436.0 / 434.3 → 421.9 / 421.2, 451.4 / 450.8 → 434.4 / 432.7 (−1 to −4 %).
# RMSNorm's fp32 parts of rows of 262144 hold theirs (run ZZZZZZI `scan`: 1024×262144 534.3 against 591.1; with a
# bf16 y 450.1 against 436.2, not taken), not those of 65536 / 131072 (`final`: 595.1 / 592.7 against 560.9 / 556.6).
# {(layer_norm, x's element size, y's): the row widths (whole) whose split parts hold their weight and bias}
_EVERY_SPLIT = (65536, 131072, 262144)
_FWD_SPLIT_HOLD_WEIGHT = {(True, 4, 4): _EVERY_SPLIT, (True, 4, 2): _EVERY_SPLIT, (False, 2, 2): _EVERY_SPLIT,
                          (False, 2, 4): _EVERY_SPLIT, (False, 4, 4): (262144,)}
# LayerNorm's bf16 rows of 32768 and 65536 (since run ZZZZZK its rows of 65536 of one head split:
# _FWD_SPLIT_LAYER_NORM; several heads keep these tiles): column tiles read three times (centered_pass), as
# torch.compile's kernel at 8192×32768 (tools/inductor_code.py, run ZZX: Σx, then Σ(x − mean)², then
# y, over 1 × 16384 on 32 warps, 280.0 µs against normkit's whole row 341.7). Sweeps (runs ZZY and
# its repeat, tools/tune.py --config, the heuristic in the same process, µs): 8192×32768 1 × 8192 on
# 16 warps 321.6 / 327.8 against the whole row 345.0 / 346.7; 4096×65536 1 × 16384 on 32 warps
# capped at 32 registers 357.5 / 357.6 against 386.5-388.8 for the staged tile (Chan's merge:
# 384.7-385.6 in runs ZZS / ZZW). Not at 131072 (554.3 against ~400: three reads of 256 KB rows
# leave L2), nor 4-byte rows (not measured). A/B (run ZZZ, 3 rounds, medians, µs): 8192×32768 342.3 →
# 317.4, 4096×65536 386.1 → 351.0; 2048×131072, 4096×16384 and fp32 4096×65536 (unchanged) ±1 %.
# Without a residual only: three reads of x and the residual were not measured (the fused LayerNorm
# keeps its whole rows of 32768 and splits wider ones, _FWD_SPLIT_RESIDUAL).
# (block_m, block_n, num_warps, max_registers)
_FWD_LAYER_NORM_CENTERED = {32768: (1, 8192, 16, 0), 65536: (1, 16384, 32, 32)}
# ... but with a 4-byte y its rows of 32768 stay whole (1 × 32768 on 32 warps, not re-read; run ZZZZZZI `scan`,
# bf16 x, fp32 y, 8192×32768: 431.9 µs against the three reads' 450.3).
_FWD_LAYER_NORM_WHOLE_4_BYTE_Y = (32768,)
# RMSNorm's 2-byte rows of 65536 without a residual: one whole row on 32 warps re-read for y (ptxas,
# sm_90: 57 registers, 0 B spilled: one program an SM, 132 rows = 17 MB in flight), not column tiles
# (two an SM: 264 rows = 33 MB, whose second reads miss the 50 MB L2). Run ZZZZJ (Nsight Compute,
# 4096×65536 bf16): DRAM read 537 MB (the minimum) in 256 µs against 657 MB in 303 µs. A/B (run
# ZZZZK, 2 rounds, µs): bf16 4096×65536 307.7 → 256.6, 2048×65536 153.7 → 133.6, fp16 290.2 → 255.7.
# With a 2-byte y only: a 4-byte y (out_dtype) spills it (ptxas, sm_90: 72-412 B; run ZZZZL: 874.0 µs
# at 4096×65536 against the column tiles' 608.4), so those rows split (_FWD_SPLIT_RMS, 479.5).
_FWD_WHOLE_RELOAD_RMS_2_BYTE = 65536
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
# ... but RMSNorm's fp32 x with a 2-byte y holds its rows of 32768 (run ZZZZZZI `scan`, 8192×32768 on 32 warps:
# 386.3 µs held against 433.6 re-read; 16 warps 386.7).
_FWD_HELD_RMS_4_TO_2 = (32768,)
# ... but the fused LayerNorm's rows of 16384 hold the row (run ZZZZZG's sweep, tools/tune.py --config
# --residual, 4096×16384, µs): 1 × 16384 on 16 warps bf16 138.2 held against 143.6 re-read (32 warps
# 143.6), fp32 272.7 against 292.3 (32 warps re-read 277.4, staged 1 × 1024 parts 279.0).
_FWD_HELD_LAYER_NORM_RESIDUAL = (16384,)
# The fused forwards' 2-byte x with a 4-byte residual (the residual stream kept in fp32) hold their rows of 8192 and
# 32768, not re-read, and the fused LayerNorm's rows of 16384 / 32768 take fewer warps (whole: num_warps). Runs
# ZZZZZZK `scanres` / ZZZZZZL `sweep` (tools/tune.py --residual-dtype fp32, every candidate, the heuristic in the same
# process, bf16, µs): the fused add 8192×32768 782.4 held on 32 warps against 982.9 re-read, 16384×8192 391.6 held on
# 16 against 407.2 (2 × 8192 on 32: 387.0), not 4096×16384 (199.0 re-read, 200.3-203.2 held); the fused LayerNorm
# 8192×32768 822.3 on 8 warps against 872.6 on 32, 4096×16384 208.4 on 4 against 215.5 on 16, 16384×8192 393.3 held
# against 407.7 re-read. Not with a 2-byte residual (run ZZZZZZL `ab`, 8192×32768: the fused add 510 → 520 held,
# the fused LayerNorm 557 → 646-651 on 8 warps).
_FWD_HELD_4_BYTE_RESIDUAL = (8192, 32768)
_FWD_LAYER_NORM_4_BYTE_RESIDUAL_WARPS = {16384: 4, 32768: 8}
# LayerNorm's 2-byte rows of 16384 with a 2-byte y (and residual) held under a 64-register cap, plain or
# fused: two programs of 16 warps an SM. Nsight Compute (run ZZZZZK `ncu`, 4096×16384 bf16): the held
# tile uncapped ran one program an SM (block limit: registers; 23 % achieved occupancy, 109.7 µs),
# re-read two (45 %, 71.4 µs), both reading the minimum 134 MB. Sweep (run ZZZZZK `capsweep`,
# tools/tune.py --config, the heuristic in the same process, µs): plain 70.7 capped against 72.6
# re-read and 111.9 held uncapped; fused 133.8 against 139.0 held uncapped and 145.9 re-read; fp32 fused
# 273.7 against 274.2 (a tie: not taken). ptxas (sm_90, tools/ptx_stats.py): uncapped 82 registers; capped
# 64, 0 B spilled with a 2-byte y, 16 B with a 4-byte one (not taken there).
_FWD_HELD_LAYER_NORM_CAP = {16384: 64}
# RMSNorm rows of 4096 that load 16 KB (the fused add's two bf16 rows, fp32): 16 warps (above).
_FWD_RELOAD_4096_WIDE_WARPS = 16
# ptxas' register cap for plain 2-byte RMSNorm rows of ≥ 16384 re-read: 1 × 32768 on 32 warps
# 38 → 32 registers without spills (1 → 2 programs an SM: 8192×32768 302 → 259 µs), 1 × 16384 on
# 16 warps 50 → 32, 16 B spilled (2 → 4: 4096×16384 71.6 → 67.7). The fused add and LayerNorm
# hold more (57-64 registers re-reading) and spill under it: 4096×16384 fused add 130 → 379. So does
# a 4-byte y (out_dtype fp32; ptxas, sm_90: 16384 206 B, 32768 190 B): run ZZZZL's sweep (bf16 x, fp32
# y and weight, µs) 4096×16384 269.5 capped against 104.6 uncapped, 8192×32768 977.4 against 520.3
# (the column tiles 581.1): the cap wants a 2-byte y as well.
_FWD_RELOAD_CAP = 32
_FWD_RELOAD_CAP_MIN = 16384


def _num_warps(tile_elements: int, cap: int = 16) -> int:
    # ~16 elements a thread: enough independent 16-byte loads in flight, few enough registers.
    return max(1, min(cap, tile_elements // 512))


def forward_tile(n: int, whole: int, heads: int, multiprocessors: int, residual: bool, layer_norm: bool,
                 element_size: int, out_element_size: int, residual_element_size: int) -> TileConfig:
    """The forward's tile on a GPU for rows of n (whole: n rounded up to a power of two); the
    arguments as `normkit.config.tile_config`'s (out_element_size, residual_element_size: y's and the
    residual's, resolved)."""
    if layer_norm and element_size == 4 and whole in _FWD_LAYER_NORM_4_BYTE:
        block_m, warps = _FWD_LAYER_NORM_4_BYTE[whole]
        return TileConfig(block_m, whole, True, warps)
    # RMSNorm's and LayerNorm's rows without a residual, one weight head: split by their tables
    sizes = (element_size, out_element_size)
    split_table = _FWD_SPLIT_LAYER_NORM if layer_norm else _FWD_SPLIT_RMS
    split = split_table.get(sizes, {}).get(whole)
    if not residual and heads == 1 and split is not None and cdiv(n, split[1]) <= multiprocessors:
        block_m, block_n, warps, per_sm, cap = split
        return TileConfig(block_m, block_n, True, warps, programs_per_sm=per_sm, split=True, max_registers=cap,
                          reload=True,
                          hold_weight=whole in _FWD_SPLIT_HOLD_WEIGHT.get((layer_norm, *sizes), ()))
    if (layer_norm and element_size == 2 and not residual and whole in _FWD_LAYER_NORM_CENTERED
            and not (sizes == (2, 4) and whole in _FWD_LAYER_NORM_WHOLE_4_BYTE_Y)):
        block_m, block_n, warps, cap = _FWD_LAYER_NORM_CENTERED[whole]
        return TileConfig(block_m, block_n, False, warps, centered_pass=True, max_registers=cap)
    block_m, part_bytes, warps, per_sm = _FWD_SPLIT_RESIDUAL
    block_n = part_bytes // element_size
    wide = whole > _MAX_ONE_TILE_FWD if layer_norm else whole * element_size > _FWD_SPLIT_MIN_BYTES
    staged_rows, staged_bytes, staged_warps, staged_per_sm, stages = _FWD_SPLIT_RESIDUAL_STAGED
    staged_n = staged_bytes // max(element_size, residual_element_size)
    if residual and element_size <= 4 and heads == 1 and wide and cdiv(n, staged_n) <= multiprocessors:
        return TileConfig(staged_rows, staged_n, True, staged_warps, programs_per_sm=staged_per_sm, split=True,
                          async_stages=stages)
    if residual and heads == 1 and wide and cdiv(n, block_n) <= multiprocessors:  # resident even at 1 an SM
        return TileConfig(block_m, block_n, True, warps, programs_per_sm=per_sm, split=True, reload=True)
    if whole > _MAX_ONE_TILE_FWD and layer_norm:
        block_m, tile_bytes, warps, stages = _FWD_LAYER_NORM_COLUMNS
        return TileConfig(block_m, tile_bytes // element_size, False, warps, column_stages=stages)
    if not (residual or layer_norm) and sizes == (2, 4) and whole in _FWD_COLUMNS_RMS_4_BYTE_Y:
        block_m, block_n, warps = _FWD_COLUMNS_RMS_4_BYTE_Y[whole]
        return TileConfig(block_m, block_n, False, warps)
    if (not (residual or layer_norm) and element_size == out_element_size == 2
            and whole == _FWD_WHOLE_RELOAD_RMS_2_BYTE):
        return TileConfig(1, whole, True, num_warps=32, reload=True)
    if whole > _MAX_ONE_TILE_FWD:
        return TileConfig(1, _FWD_COLUMN_TILE, False, num_warps=32)
    # LayerNorm's rows held under a register cap where x, y and the residual are all 2-byte
    two_byte = element_size == out_element_size == 2 and (not residual or residual_element_size == 2)
    held_cap = _FWD_HELD_LAYER_NORM_CAP.get(whole, 0) if layer_norm and two_byte else 0
    held_rms = not (layer_norm or residual) and sizes == (4, 2) and whole in _FWD_HELD_RMS_4_TO_2
    wide_residual = residual and element_size == 2 and residual_element_size == 4
    held_residual = wide_residual and whole in _FWD_HELD_4_BYTE_RESIDUAL
    reload = whole >= _FWD_RELOAD_MIN and not (held_rms or held_residual) and not (layer_norm and (
        whole == _MAX_ONE_TILE_FWD or held_cap or residual and whole in _FWD_HELD_LAYER_NORM_RESIDUAL))
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
    if layer_norm and wide_residual:
        warps = _FWD_LAYER_NORM_4_BYTE_RESIDUAL_WARPS.get(whole, warps)
    capped = (reload and whole >= _FWD_RELOAD_CAP_MIN and not (layer_norm or residual)
              and element_size == out_element_size == 2)
    return TileConfig(block_m, whole, True, warps, reload=reload,
                      max_registers=_FWD_RELOAD_CAP if capped else held_cap)
