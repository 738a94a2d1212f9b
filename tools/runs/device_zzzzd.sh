#!/usr/bin/env bash
# Device run ZZZZD (session 19, nvidia-h200, ~5 min; carry [".whl"]): the side-by-side grid
# (BENCHMARKS' current numbers) on main with design change 18 in the working tree — the first with
# graph_time's 0.1 s warm-up; tools/runs/device_zzzzb.sh's GPU-1 half on the one GPU lent.
# Prediction: RMSNorm bf16 131072×8192 backward 1530-1560 µs, forward ~1000; the split shapes as
# ZZZZC's A/B's patched arm (±2 %); everything else within ±2 % of run ZZZZ.
# Outcome (276 s, copy 4216 GB/s; docs/bench_h200_run_zzzzd.json): 131072×8192 1547 backward (99 %),
# 1002 forward (102 %); the split shapes as ZZZZC's patched arm (RMSNorm 446 / 456 / 470, the fused
# add 637 / 658 / 645, LayerNorm 514 / 516 / 575 µs); the launch-bound 4096×2048 rows 3-8 % slower than
# in ZZZZ, forwards too (design change 18 does not touch them) — this machine's, not the build's.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
side_by_side 470
tail -5 $OUT/bench.log
pack_logs
