#!/usr/bin/env bash
# Device run ZZZG (prepared in session 15 for the next session, nvidia-h200-x2, ~6 min; no setup:
# carry [".whl"]).
#  - GPU 1: the side-by-side grid after design change 13 (the backward's split parts on two programs
#    an SM, run ZZZF's A/B; "Current numbers" in BENCHMARKS.md still show run ZZZA, before it). Refresh
#    the tables with `python tools/bench_tables.py docs/bench_h200_run_zzzg.json` (after copying
#    bench.json there and naming it under "Raw rows:"; tests/test_tools.py checks they match).
#  - GPU 0: (1) sweeps: fp32 backward at 4096×16384 / 4096×65536 on split parts with two programs an
#    SM — Liger leads the fused add's fp32 4096×16384 backward (286 µs against 311, run ZZZA), where
#    normkit's 1 × 4096 parts on 16 warps (123 registers) fit one an SM; ptxas (sm_90, on the CPU):
#    1 × 2048 on 8 warps 123-127 registers and 1 × 2048 on 4 warps 226-245 fit two. (2) the fused add
#    bf16 2048×131072, where 1 × 4096 parts on 4 warps, two an SM, lost (+6.5 %, run ZZZF): 2 × 2048
#    on 4 warps, two an SM (LayerNorm's, which won there for LayerNorm). (3) bf16 split parts under a
#    register cap (the backward honours max_registers since session 15's last commit): ptxas (sm_90,
#    on the CPU, tools/ptx_stats.py --max-registers) 1 × 4096 / 2 × 2048 on 8 warps capped at 128 —
#    32-128 B spilled, two an SM = 16 warps an SM (the landed paired parts: 8); 1 × 2048 on 4 warps
#    at 128 — 40-132 B, four an SM. (4) compute-sanitizer memcheck over every split backward
#    configuration (the paired parts were never run under it). (5) LayerNorm's three-read forward
#    tiles with their first pass staged 3 / 2 deep (column_stages; run ZZZD swept them unstaged only).
# Count: the fused add fp32 4096×16384 backward moves 4 × 256 MiB = 1.07 GB → 255 µs at 4206 GB/s.
# Prediction: two programs an SM ≤ 290 µs there (Liger 286); the fused add 2048×131072 on 2 × 2048
# within ±3 % of 709; capped 8-warp parts within ±5 % of the paired 4-warp ones (16 warps an SM
# against 8, a few spilled bytes); memcheck 0 errors.
# Outcome (session 16): fp32 two an SM won but at the Liger shape — RMSNorm 4096×16384 233.4 / 235.1
# (8 / 4 warps) against 255.9, 4096×65536 942.0 (4 warps) against 985.1, LayerNorm 239.9 / 945.4
# against 260.7 / 1055.2, the fused add 309.0 (8 warps) / 1233.7 (4) against 311.4 / 1244.3 (Liger 286:
# refuted); the fused add 2048×131072 on 2 × 2048 773.7 against 732.8 (+5.6 %); capped 8-warp parts:
# LayerNorm 8192×32768 543.2 against 580.7, elsewhere 548-1409 against 508-599; staged three-read
# tiles 354-560 against 321.5 / 359.8 (refuted); memcheck 60 runs, 0 errors. Side by side: bench.json
# → docs/bench_h200_run_zzzg.json. Landed from it: design change 14 (run ZZZH).
source tools/device_env.sh
sweep() { tune_sweep bwd "$1" "$2" "$3" 150 "${@:4}"; }  # family dtype shapes configs...
(
  export CUDA_VISIBLE_DEVICES=0
  for family in fused_add rms layer_norm; do
    sweep $family fp32 4096x16384,4096x65536 1x2048:8:split:pf:p2 1x2048:4:split:pf:p2 1x2048:8:split:pf \
        1x4096:16:split:pf
  done
  sweep fused_add bf16 2048x131072,4096x65536 2x2048:4:split:pf:p2 1x4096:4:split:pf:p2 1x8192:8:split:pf \
      1x4096:8:split:pf:p2:r128 2x2048:8:split:pf:p2:r128
  for family in rms layer_norm; do
    sweep $family bf16 8192x32768,4096x65536 1x4096:8:split:pf:p2:r128 2x2048:8:split:pf:p2:r128 \
        1x2048:4:split:pf:p4:r128
  done
  # (5) LayerNorm's three-read forward tiles with the first pass's loads staged (cp.async), never swept
  tune_sweep fwd layer_norm bf16 8192x32768,4096x65536 90 1x8192:16:col:two:s3 1x8192:16:col:two:s2 \
      1x16384:32:col:two:r32:s3 1x4096:8:col:two:s3
  memcheck_split bwd 150
) > "$L/gpu0.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=1; side_by_side 400 ) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
