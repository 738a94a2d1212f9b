"""The backward's launch heuristics: measured tables (tools/tune.py on an H200, BENCHMARKS.md; each
constant with the measurement beside it) and `backward_tile`, the backward half of `tile_config`."""

from typing import Optional

from .tile import _MAX_BLOCK_M, TileConfig, cdiv

# Widest row kept whole in registers: x, dy, w and the dweight partial are live at once; a 16384
# row on 8 warps spills, yet ran 4096×16384 in 146 µs against 233 for two passes over column tiles
# (run C); 32768 lost to column tiles.
_MAX_ONE_TILE_BWD = 16384
# Column tile for rows wider than that (two passes over the row, the second mostly from L2):
# 4096 × 2 rows × 16 warps won 3 of 4 wide shapes (4096×16384 … 2048×131072) by 2-45 %.
_COLUMN_TILE = 4096
_COLUMN_TILE_ROWS = 2
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
# RMSNorm's and the fused add's 1 × 4096 parts on rows up to 65536 read the previous row block
# again after the exchange (reload): ptxas, sm_90, its 16-72 B of spills → 0. Run ZZZL's sweep
# (bf16, µs): RMSNorm 8192×32768 492.5 against 509.9, 4096×65536 515.6 against 525.1. A/B (3 rounds,
# runs ZZZM-ZZZN): RMSNorm 502.8 → 488.5, 520.5 → 501.9, but 2048×131072 541.0 → 589.7 and
# 1024×262144 557.9 → 599.7 (32-64 parts a row), so then only on rows up to 65536; the fused add
# (one round) 671.6 → 657.8, 691.9 → 677.2, and its 1 × 8192 parts past 65536 (run ZZZL: 705.1
# against 724.3 at 2048×131072). LayerNorm's 2 × 2048 parts lost with it (616.4 against 528.5 for its
# capped 8-warp parts at 8192×32768; 654.9 against 603.0).
# Design change 17 (RMSNorm's / the fused add's parts neither compute nor exchange Σg; ptxas, sm_90:
# 13-24 registers fewer) turned it round: every 2-byte part holds the row block again. Run ZZZX's
# sweep (bf16, µs, tools/tune.py --config): RMSNorm 8192×32768 464.4 held against 508.7 reloading,
# 4096×65536 471.0 against 537.7; the fused add 635.3 against 666.2, 649.1 against 685.2, its 1 × 8192
# parts at 2048×131072 656.5 against 700.8.
# (rows, part width, warps, programs an SM, register cap, reload)
_PAIRED_SPLIT = (2, 2048, 4, 2, 0, False)
_PAIRED_SPLIT_RMS = (1, 4096, 4, 2, 0, False)
_PAIRED_SPLIT_RESIDUAL_MAX = 65536
# Since design change 18, RMSNorm's / the fused add's bf16 rows wider than 32768: 16 warps an SM —
# 1 × 2048 parts on 4 warps capped at 128 registers, four an SM, or 1 × 4096 on 8 capped, two an SM
# (ptxas, sm_90: 28-32 B spilled either). Runs ZZZZF / ZZZZG's sweeps (bf16, µs, against the
# heuristic's 1 × 4096 on 4 warps, two an SM; the fused add's 1 × 8192 on 8 past 65536): RMSNorm
# 4096×65536 432.2 / 430.7 against 450.5 / 449.4, 2048×131072 437.4 / 436.8 (1 × 4096 on 8) against
# 465.8 / 464.1, 1024×262144 469.8 against 502.1; the fused add 4096×65536 604.9 / 599.6 against
# 626.9 / 628.8, 2048×131072 617.6 (1 × 4096 on 8) against 638.1; at 8192×32768 neither (RMSNorm 461.7
# / 464.4 against 440.6).
# A/B (run ZZZZH, 2 rounds): RMSNorm 448.8 → 433.2, 463.7 → 438.4, 505.2 → 472.8; the fused add
# 629.7 → 598.9, 641.8 → 613.8. The fused add's rows of 262144 (not measured) keep 1 × 8192 on 8.
_FOUR_2048_PARTS_AN_SM = (1, 2048, 4, 4, 128, False)
_SIXTEEN_WARPS_AN_SM = {65536: _FOUR_2048_PARTS_AN_SM, 131072: (1, 4096, 8, 2, 128, False),
                        262144: _FOUR_2048_PARTS_AN_SM}
_SIXTEEN_WARPS_AN_SM_RESIDUAL_MAX = 131072
# The 2-byte rows of 16384 (8193 … 16384 columns) split by family (design change 24): LayerNorm's in
# 2 × 2048 parts on 4 warps, two an SM (_PAIRED_SPLIT), RMSNorm's in 1 × 4096 on 4, two an SM
# (_PAIRED_SPLIT_RMS), the fused add's in 1 × 2048 on 4 capped at 128 registers, four an SM
# (_FOUR_2048_PARTS_AN_SM). Run
# ZZZZM's sweep (ZZZZJ `bsweep`, tools/tune.py --config, bf16, µs, against 2 × 2048 for every family
# until then): RMSNorm 4096×16384 118.2 against 125.0, 8192×16384 227.0 against 242.7; the fused add
# 158.7 against 163.5, 310.2 against 318.0; LayerNorm's 1 × 4096 / 1 × 2048 parts 167.5-173.3
# against 135.9. A/B: BENCHMARKS.md, design change 24.
# LayerNorm's bf16 rows of 32768 (no residual): 2 × 2048 on 8 warps capped at 128 registers, two an SM
# (16 warps an SM against the 4-warp parts' 8). Run ZZZG's sweep (tools/tune.py --config, µs):
# 8192×32768 543.2 against 580.7; at 4096×65536 629.9 against 598.7, so rows of 32768 only.
_PAIRED_SPLIT_LAYER_NORM_32768 = (2, 2048, 8, 2, 128, False)
# 4-byte rows: 8 KB of x a part (2048 fp32 columns) on 4 warps, two an SM until run ZZZM (ptxas,
# sm_90: 226-245 registers); the fused add's rows up to 16384 on 8 warps (123-127) until then. Run ZZZG's sweep (fp32, µs,
# against 1 × 4096 on 16 warps, one an SM): 4096×16384 RMSNorm 235.1 (8 warps: 233.4) against 255.9,
# LayerNorm 239.9 against 260.7, the fused add 309.0 on 8 warps (317.3 on 4) against 311.4;
# 4096×65536 RMSNorm 942.0 against 985.1, LayerNorm 945.4 against 1055.2, the fused add 1233.7
# against 1244.3 (8 warps: 1313-1469). fp64 keeps _SPLIT_WIDE_ELEMENTS (not measured).
# Since run ZZZM: these parts read the previous row block again after the exchange (reload,
# kernels/backward.py) rather than hold it, one row block fewer in registers (ptxas, sm_90: 225-245
# → 162-167 registers), so three fit an SM, the fused add's on 4 warps too. Run ZZZL's sweep (fp32,
# µs, against the heuristic then): 4096×16384 RMSNorm 235.9 against 237.8, the fused add 301.4
# against 309.1 (8 warps, two an SM), LayerNorm 241.3 against 242.2; 4096×65536 918.9 against
# 940.1, 1223.1 against 1229.1, 945.3 against 943.0.
# Design change 17 (RMSNorm's parts without Σg, fewer exchange reductions) made holding the block
# win again on some rows. Run ZZZY's sweep (fp32, µs, held against reloading): RMSNorm 4096×16384
# 221.0 against 226.2, 4096×65536 854.3 against 877.3, but 2048×131072 965.3 against 920.7;
# LayerNorm 224.3 against 231.4, then 943.0 against 918.0, 1034.9 against 961.3; the fused add
# 303.2 against 292.0, 1190.3 against 1185.6, 1280.5 against 1239.7. Held up to the widths below.
# Held parts take 202 (RMSNorm) / 229 (LayerNorm) registers (ptxas, sm_90): two an SM (the sweep's
# "three an SM" held parts ran as two: the launcher fits the grid to what is resident).
# (rows, part width, warps, programs an SM, register cap, reload)
_PAIRED_SPLIT_4_BYTE = (1, 2048, 4, 3, 0, True)
_PAIRED_SPLIT_4_BYTE_HELD = (1, 2048, 4, 2, 0, False)
_PAIRED_SPLIT_4_BYTE_HELD_MAX = {"rms": 65536, "layer_norm": 16384, "fused_add": 0}
# Design change 30 (session 24): the exchange's wait spins in PTX, lane by lane (kernels/stats.py
# _await_word), so Triton's pipeliner takes the split parts' row loop (a loop nested in it, the
# poll, had kept it out): their loads staged 3-4 deep in shared memory (cp.async, async_stages)
# instead of one row block prefetched in registers — two or three blocks in flight a part, and
# registers freed (ptxas, sm_90: RMSNorm's bf16 1 × 2048 parts on 4 warps 121-128 registers, 0 B
# spilled, against 128 capped and 20 B spilled; LayerNorm's 128, four an SM, against 168, three).
# Runs ZZZZZC sweep / sweep2 / sweep3 (tools/tune.py --config, µs, against run ZZZZS's grid where the
# prefetching parts ran): bf16 RMSNorm 1 × 2048 on 4 warps four an SM, 3 stages — 4096×16384 108.3
# against 115.0, 8192×32768 410.1 against 440.3, 4096×65536 415.5 against 431.7, 1024×262144 451.6
# against the heuristic's 488.3 in the same run; at 2048×131072 1 × 4096 on 4, two an SM, 430.6
# against 438.9 (1 × 2048: 438.0). The fused add's 1 × 2048 parts: 132.2 against 161.0, 508.3
# against 631.1, 508.9 against 602.2, 511.9 against 609.9, 514.5 against the heuristic's 649.1 at
# 1024×262144 (95-99 % of copy). LayerNorm's (no residual): 1 × 2048, 3 stages at 4096×16384 126.6
# against 134.3, 2048×131072 522.5 against 562.2; 1 × 4096 on 8 capped at 1024×262144 567.2 against
# the heuristic's 685.8; not at 4096×65536 (best staged 518.7-546.0 for 1 × 4096 on 8, 521.6 for
# 2 × 2048 four deep, against 510.0; 1 × 2048 566-607) nor 8192×32768 (1 × 2048 four deep 485.5 in
# the sweep, but 523.9 in run ZZZZZC's grid against run ZZZZS's 512.9 for the prefetching parts).
# fp32: RMSNorm 1 × 1024 on 4, four an SM, 200.9 against 219.8 at 4096×16384, 853.2 against the
# heuristic's 882.0 at 2048×131072, 1 × 2048 on 8 two an SM 803.8 against 850.4 at 4096×65536; the
# fused add 1 × 1024: 253.4 against 290.2, 993.8 against 1130.6, 996.6 against the
# heuristic's 1113.0 at 2048×131072. LayerNorm fp32 lost (934.6 against 896.8 at 4096×65536). The
# recomputing backward lost everywhere it was timed (RMSNorm bf16 4096×16384 146.4 against 132.7,
# 8192×32768 633.2 against 503.8; LayerNorm 215.3 against 186.2 at 4096×16384, 873.3 against 818.8
# at 2048×131072): it kept the prefetching parts, as do rows that are not vector-aligned (cp.async). The
# prefetching parts kept the poll loop: spinning cost them 5-19 % (the same sweeps' heuristic lines: RMSNorm
# 4096×65536 501.2 against 431.7; run ZZZZZC `ab`, same PTX but the wait: LayerNorm fp32 4096×65536 895 → 1063)
# — the recomputing parts' quantities then awaited one wait after another (session 35: one wait for all, and
# every part spins; the recomputing 2-byte parts stage, below). The 1 × 2048 parts capped at 128 registers, four
# an SM, as timed (ptxas, sm_90, uncapped: the fused add's 148, LayerNorm's 142 — three an SM; RMSNorm's 128
# either way, 413.2 / 414.4 µs at 8192×32768). (rows, part width, warps, programs an SM, register cap, reload,
# stages)
# Session 25, runs ZZZZZD / ZZZZZE sweeps (tools/tune.py --config, µs, against the heuristic's prefetching
# parts in the same process): the fused LayerNorm's bf16 rows (--residual) in _STAGED: 4096×16384 155.9
# against 169.8, 8192×32768 606.1 / 641.9, 4096×65536 626.9 / 716.4 (four deep 602.1), 2048×131072 612.8 /
# 748.6, 1024×262144 599.3 / 823.6 (four deep 637.2); LayerNorm's fp32 rows, with or without a residual,
# in 1 × 2048 on 4, three an SM (1 × 1024 lost everywhere): 4096×16384 211.5 / 221.1, 8192×32768 863.1 /
# 926.6, 4096×65536 879.3 / 893.6, 2048×131072 827.8 / 930.6; the fused LayerNorm's 265.1 / 291.1,
# 1040.6 / 1108.5; LayerNorm bf16 8192×32768 1 × 4096 on 4, two an SM, 486.0 / 512.3 (485.5 in run
# ZZZZZC's sweep; its 1 × 2048 517.6-527.9). Not LayerNorm bf16 4096×65536 (best staged 519.6 / 512.5).
# LayerNorm's fp32 parts four deep (run ZZZZZE sweep4 / sweep5, each configuration two or three times in
# one process, µs, four against three deep): 8192×32768 807.7-811.4 / 858.8-860.6, 4096×65536 811.0-813.3
# / 883.4-888.3, the fused LayerNorm 4096×65536 1000.9 / 1037.0-1039.9; ties at 2048×131072 (820.0-822.1 /
# 820.5-821.8) and 4096×16384 (209.6 / 211.8, the fused 265.3 / 264.9-266.5). The fused LayerNorm's bf16 parts
# four deep at 32768 / 65536 (run ZZZZZE sweep6, each twice in one process: 579.4-580.8 against 605.9-607.7,
# 595.9-596.5 against 624.7-625.2; sweep / sweep2 at 65536: 602.1 / 597.0 against 626.9 / 622.9) — not at
# 131072 / 262144 (628.9 against 610.5, 637.2 against 599.3).
# Session 27, run ZZZZZG's sweep (tools/tune.py --config, bf16, µs, against the heuristic in the same
# process), since design change 32's paired wait: LayerNorm's 1 × 4096 parts on 4 warps, two an SM, at
# 4096×65536 448.8 against the prefetching 2 × 2048's 512.8 (its 1 × 2048 staged: 460.8), at 2048×131072
# 454.9 against the staged 1 × 2048's 500.7; the fused LayerNorm's at 2048×131072 551.0 against 609.5.
# Run ZZZZZH's probe: at 1024×262144 496.7 against 570.5 for 1 × 4096 on 8 capped (the fused LayerNorm's
# 565.5 against its 1 × 2048's 568.4: a tie, kept).
_STAGED = (1, 2048, 4, 4, 128, False, 3)
_STAGED_4096_PARTS = (1, 4096, 4, 2, 0, False, 3)
_STAGED_RMS = {131072: _STAGED_4096_PARTS}
_STAGED_LAYER_NORM = {16384: _STAGED, 32768: _STAGED_4096_PARTS, 65536: _STAGED_4096_PARTS,
                      131072: _STAGED_4096_PARTS, 262144: _STAGED_4096_PARTS}
_STAGED_4_BYTE = (1, 1024, 4, 4, 0, False, 3)
_STAGED_4_BYTE_RMS = {65536: (1, 2048, 8, 2, 0, False, 3)}
_STAGED_4_BYTE_LAYER_NORM = (1, 2048, 4, 3, 0, False, 4)
_STAGED_FOUR_DEEP = _STAGED[:-1] + (4,)
_STAGED_LAYER_NORM_RESIDUAL = {32768: _STAGED_FOUR_DEEP, 65536: _STAGED_FOUR_DEEP, 131072: _STAGED_4096_PARTS}
# The recomputing backward (no saved statistics) stages its 2-byte parts too since session 35 — RMSNorm, the
# fused add and LayerNorm without a residual; their spin wait takes Σ(g·h) (and Σg) with the statistics in one
# round trip (stats._await_slot; before, one wait after another, so only the prefetching parts, polling, were used).
# Run ZZZZZW `stagedrec` (tools/tune.py --recompute --config, bf16, µs, against the heuristic's prefetching
# parts in the same process): RMSNorm in the tables above — 4096×16384 113.3 against 126.0, 4096×32768 220.3
# / 242.7, 4096×65536 440.5 / 506.9, 2048×131072 452.3 (1 × 4096) / 524.6, 1024×262144 473.0 / 475.9; the
# fused add in _STAGED: 132.8 / 164.1, 513.6 / 678.9 (4096×65536), 525.9 / 695.4 (2048×131072); LayerNorm
# in _STAGED_LAYER_NORM at 32768-131072 (245.1 / 367.7, 502.0 / 667.5, 519.3 / 671.3), but its 1 × 4096 at
# 16384 (127.5 against 141.6; _STAGED's 1 × 2048 152.0) and 1 × 8192 on 8 warps at 262144 (554.9; 1 × 4096
# 599.0, prefetching 740.8).
# Session 36, run ZZZZZX `fusedlnrec` / `fp32rec` (the same sweeps): the fused LayerNorm's bf16 parts as
# LayerNorm's — 1 × 4096 on 4, two an SM, 145.9 against the prefetching heuristic's 179.4 (4096×16384), 569.0 /
# 845.3 (4096×65536), 580.9 / 822.5 (2048×131072), 1 × 8192 on 8 613.0 / 868.6 (1024×262144; 1 × 4096 661.2,
# _STAGED 628.9-758.7); every 4-byte recomputing part in _STAGED_4_BYTE_LAYER_NORM (1 × 2048 on 4, three an SM,
# four deep) — RMSNorm fp32 202.3 / 214.7, 758.9 / 855.4, 765.7 / 908.5 at 4096×16384, 4096×65536,
# 2048×131072; the fused add 255.7 / 285.6, 1009.6 / 1120.8, 986.8 / 1138.4 (1 × 1024, four an SM: 253.6,
# 1008.9, 1010.1); LayerNorm 224.0 / 226.5, 916.8 / 917.9, 1070.4 / 1141.0 (1 × 1024 and 1 × 2048 on 8 lost
# everywhere, to 16 %). Run ZZZZZY `heur` (the heuristic against the prefetching parts forced, one process):
# 4096×32768 384.3 / 433.5 (RMSNorm), 505.2 / 553.1 (the fused add), 458.9 / 463.9 (LayerNorm); 1024×262144
# 776.6 / 929.6, 970.0 / 1155.3, but LayerNorm's 1140.0 against 1022.1 for 1 × 2048 three an SM reloading:
# kept prefetching; the fused LayerNorm fp32 (unswept) 275.1 / 312.0, 551.6 / 631.1, 1083.5 / 1251.5,
# 1197.8 / 1444.7, 1410.0 / 1473.2. Run ZZZZZZ `lnfp32` / `lnfp32b` (LayerNorm's fp32 tiles, one process
# each, µs): 1 × 4096 on 8 warps, one an SM, 3 stages at 2048×131072 951.0 / 949.0 against 1078.0 / 1070.8
# (1 × 2048 on 8, 1 × 1024, 2 × 1024 1120-1918), the fused LayerNorm's 1127.4 against 1193.7 there and 1371.3 /
# 1370.8 against 1429.2 / 1425.9 at 1024×262144 (LayerNorm's there: 1273.7-1300.3 against the prefetching 1004.6-1011.6);
# 4096×16384-65536 kept 1 × 2048 (bf16 LayerNorm: the heuristic won against 12 other staged tiles).
_STAGED_4096_ON_8 = (1, 4096, 8, 1, 0, False, 3)
# With saved statistics, LayerNorm fp32 2048×131072 (run ZZZZZZ `lnfp32b` / `savedln`, three processes): 1 × 4096
# on 8 four deep 865.7, 865.1 / 863.6 / 864.6 against 1 × 2048's 916.7, 903.0 / 901.0 / 902.2 (3 stages:
# 962.9-993.2); not 1024×262144 (1031.3 against 785.4) nor the fused LayerNorm's (1042.2 against 1047.9).
_STAGED_4_BYTE_LAYER_NORM_WIDE = _STAGED_4096_ON_8[:-1] + (4,)
_STAGED_4_BYTE_LAYER_NORM_RECOMPUTE = {(False, 131072): _STAGED_4096_ON_8, (False, 262144): None,
                                       (True, 131072): _STAGED_4096_ON_8, (True, 262144): _STAGED_4096_ON_8}
_STAGED_LAYER_NORM_RECOMPUTE = {**_STAGED_LAYER_NORM, 16384: _STAGED_4096_PARTS, 262144: (1, 8192, 8, 1, 0, False, 3)}


def _staged_split(whole: int, residual: bool, layer_norm: bool, element_size: int,
                  recompute: bool = False) -> Optional[tuple]:
    """The staged split parts (design change 30) for rows of `whole`, or None where the
    prefetching parts stay (8-byte elements). recompute: the statistics are recomputed (their
    own tables: LayerNorm's 2-byte rows, with or without a residual, and its 4-byte rows)."""
    if recompute and element_size == 4:
        if layer_norm:  # keyed (residual, whole); None: the prefetching parts
            return _STAGED_4_BYTE_LAYER_NORM_RECOMPUTE.get((residual, whole), _STAGED_4_BYTE_LAYER_NORM)
        return _STAGED_4_BYTE_LAYER_NORM
    if recompute and layer_norm and element_size == 2:
        return _STAGED_LAYER_NORM_RECOMPUTE.get(whole)
    if layer_norm:
        if element_size == 4:
            return _STAGED_4_BYTE_LAYER_NORM_WIDE if whole == 131072 and not residual else _STAGED_4_BYTE_LAYER_NORM
        if element_size != 2:
            return None
        return _STAGED_LAYER_NORM_RESIDUAL.get(whole, _STAGED) if residual else _STAGED_LAYER_NORM.get(whole)
    if element_size == 2:
        return _STAGED if residual else _STAGED_RMS.get(whole, _STAGED)
    if element_size == 4:
        return _STAGED_4_BYTE if residual else _STAGED_4_BYTE_RMS.get(whole, _STAGED_4_BYTE)
    return None


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
# The widest rows the fused add (RMSNorm with dresidual_out) stages, and the fused LayerNorm: its rows
# of 8192 stage too — run ZZZZZG's sweep (tools/tune.py --config --residual, bf16 16384×8192, µs): the
# staged 1 × 8192 on 8 warps 264.2 (16 warps 266.0, two deep 336.3) against 311.9 for the fused add's
# prefetching 1 × 8192 on 16 warps (ptx count, session 26: 389 instructions a thread a row block, 11
# bar.sync, against the fused add's 296 and 7 on that tile).
_BWD_ASYNC_RESIDUAL_MAX = {False: 4096, True: 8192}  # keyed by layer_norm
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


def _staged_tile(whole: int, residual: bool, layer_norm: bool) -> Optional[tuple]:
    """(block_m, num_warps, programs_per_sm) of the staged whole-row backward tile for 2-byte rows
    of `whole`, or None where rows of that width prefetch (or take the generic tile) instead."""
    if residual:
        if whole in _BWD_ASYNC_RESIDUAL:
            return _BWD_ASYNC_RESIDUAL[whole]
        if whole > _BWD_ASYNC_RESIDUAL_MAX[layer_norm]:
            return None
    elif layer_norm and whole in _BWD_ASYNC_LAYER_NORM:
        return _BWD_ASYNC_LAYER_NORM[whole]
    return _BWD_ASYNC_2_BYTE.get(whole)


def _split_parts(whole: int, residual: bool, layer_norm: bool, element_size: int, staged: bool,
                 recompute: bool = False) -> tuple:
    """The backward's split parts (rows, part width, warps, programs an SM, register cap, reload[, stages]) for a
    row of `whole` (N rounded up to a power of two) columns, best first: the heuristic takes the first whose
    parts all fit one an SM (parts·heads ≤ multiprocessors). staged: the staged parts may lead
    (_staged_split: vector-aligned rows); recompute: the statistics are recomputed."""
    first = _staged_split(whole, residual, layer_norm, element_size, recompute) if staged else None
    return ((first,) if first else ()) + _prefetching_parts(whole, residual, layer_norm, element_size)


def _prefetching_parts(whole: int, residual: bool, layer_norm: bool, element_size: int) -> tuple:
    """`_split_parts`' candidates that prefetch the next row block in registers."""
    if element_size > 2:
        rows, part_bytes, warps = _SPLIT_WIDE_ELEMENTS
        sixteen_kb = (rows, part_bytes // element_size, warps, 1, 0, False)
        if element_size > 4:
            return (sixteen_kb,)
        family = "fused_add" if residual else "layer_norm" if layer_norm else "rms"
        held = whole <= _PAIRED_SPLIT_4_BYTE_HELD_MAX[family]
        return (_PAIRED_SPLIT_4_BYTE_HELD if held else _PAIRED_SPLIT_4_BYTE, sixteen_kb)
    wide = (_SPLIT_ROWS, _SPLIT_PART, _SPLIT_WARPS, 1, 0, False)
    narrow = _NARROW_SPLIT + (1, 0, False)
    if whole <= _MAX_ONE_TILE_BWD:  # rows of 16384: design change 24
        return (_PAIRED_SPLIT if layer_norm else _FOUR_2048_PARTS_AN_SM if residual else _PAIRED_SPLIT_RMS, narrow)
    if layer_norm:
        first = _PAIRED_SPLIT_LAYER_NORM_32768 if whole == 32768 and not residual else _PAIRED_SPLIT
        return (first, narrow, wide)
    sixteen = (_SIXTEEN_WARPS_AN_SM[whole],) if whole in _SIXTEEN_WARPS_AN_SM and not (
        residual and whole > _SIXTEEN_WARPS_AN_SM_RESIDUAL_MAX) else ()
    if residual and whole > _PAIRED_SPLIT_RESIDUAL_MAX:
        return sixteen + (wide,)
    return sixteen + (_PAIRED_SPLIT_RMS, wide)


def may_stage(n: int, element_size: int) -> bool:
    """Whether the backward's tile for rows of n may stage its loads in shared memory — 2-byte rows,
    and 4-byte rows split across programs — so `backward_tile` needs to know `vector_aligned`."""
    return element_size == 2 or (element_size == 4 and n > _MAX_ONE_TILE_BWD // 2)


def _prefetch_tile(whole: int, residual: bool, element_size: int) -> tuple:
    """(block_m, num_warps, programs_per_sm) of the prefetching whole-row backward tile for rows
    of `whole` (a width in _BWD_PREFETCH): from the most specific table that has the width."""
    for table, applies in ((_BWD_PREFETCH_RESIDUAL_4_BYTE, residual and element_size == 4),
                           (_BWD_PREFETCH_RESIDUAL, residual)):
        if applies and whole in table:
            return table[whole]
    return _BWD_PREFETCH[whole]


# The recomputing backward's split parts reduce their statistics' sum (Σh for LayerNorm, Σh² for
# RMSNorm) in the tree of Σ(g·h) / Σg (one round of cross-warp exchanges fewer: 17 → 14 bar.sync in
# LayerNorm's 2 × 2048 parts, 14 → 11 and 10 → 7 in RMSNorm's) — except RMSNorm's parts whose threads
# hold more than 16 elements, where holding both products for one tree cost more than the barriers.
# Run ZZZZZB (tools/tune.py --kind bwd --recompute, bf16, the heuristic, µs, before → after):
# LayerNorm 4096×16384 149.9 → 144.5, 2048×131072 771.1 → 751.9; RMSNorm 4096×65536 (1 × 2048 on 4
# warps, 16 a thread) 509.6 → 486.7, 2048×131072 (1 × 4096 on 8, 16) 541.7 / 534.7 → 492.9 / 494.7,
# but 4096×16384 (1 × 4096 on 4, 32 a thread) 122.8 / 122.8 → 131.8 / 131.6.
_JOIN_STATS_RMS_MAX_ELEMENTS = 16


def joins_stats(config: TileConfig, layer_norm: bool) -> bool:
    """Whether a recomputing backward's split parts (config.split) reduce their statistics' sum in
    one tree with Σ(g·h) / Σg (kernels/backward.py JOIN_STATS)."""
    per_thread = config.block_m * config.block_n // (32 * config.num_warps)
    return config.split and (layer_norm or per_thread <= _JOIN_STATS_RMS_MAX_ELEMENTS)


# Design change 35 (run ZZZZZL `ab`, ZZZZZM `fp32ab` / `evenab`): where every column of a tile (or split
# part) lies inside the row — N a multiple of block_n — the kernel drops its column mask (EVEN_COLS), about
# 3-7 % of the row loop's instructions (tools/ptx_stats.py --sass). Only for 2-byte inputs: float32's split
# parts ran 0.3-1.2 % slower without the mask (LayerNorm fp32 4096×16384 201.1 → 203.6 µs, RMSNorm fp32
# 4096×65536 812 → 817; with the mask for float32, 201.3 / 811.7), though their loop shrank 516 → 489.
def even_cols(config: TileConfig, n: int, element_size: int) -> bool:
    """Whether the backward launches with EVEN_COLS (kernels/backward.py: no column mask): a one-tile
    config whose block_n divides n, for 2-byte inputs."""
    return config.one_tile and n % config.block_n == 0 and element_size < 4


def backward_tile(n: int, whole: int, heads: int, multiprocessors: int, residual: bool, layer_norm: bool,
                  element_size: int, vector_aligned: bool, recompute: bool = False) -> TileConfig:
    """The backward's tile on a GPU for rows of n (whole: n rounded up to a power of two); the
    arguments as `normkit.config.tile_config`'s."""
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
    for rows, part, warps, per_sm, cap, reload, *stages in _split_parts(whole, residual, layer_norm, element_size,
                                                                       vector_aligned, recompute):
        if cdiv(n, part) * heads <= multiprocessors:
            return TileConfig(rows, part, True, num_warps=warps, programs_per_sm=per_sm, split=True,
                              prefetch=_SPLIT_PREFETCH and not stages, async_stages=stages[0] if stages else 0,
                              max_registers=cap, reload=reload)
    if narrow:
        return TileConfig(1, whole, True, num_warps=8, programs_per_sm=1)
    return TileConfig(_COLUMN_TILE_ROWS, _COLUMN_TILE, False, num_warps=16, programs_per_sm=2)
