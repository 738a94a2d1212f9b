#!/usr/bin/env bash
# Device run ZZZZZZD (session 37, nvidia-h200; no carry needed): LayerNorm fp32's wide forward with its held
# weight and bias (design change 40) against its peers in one process — `python -m normkit bench`, the
# README's numbers for the rows design change 40 moved, torch.compile and native beside it.
# Prediction: normkit 4096×65536 ~545 µs (93 %), 1024×262144 ~557 (91 %); torch.compile ~1070 (session
# 30's) and native slower; the backward unchanged (no backward code moved).
# Outcome (session 37, 42 s; one earlier start refused): copy 4217 GB/s; forward normkit 548 µs (93 %) /
# 561 (91 %), native 864 / 949, torch.compile 1032 / 1043; backward normkit 759 / 780 (101 / 98 %), native
# 1777 / 1771, torch.compile 2316 / 2395; errors ≤ 3.4e-7. Raw rows docs/bench_h200_run_zzzzzzd_ln_fp32.json.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
timeout "${LIMIT:-270}" python3 -m normkit bench --family layer_norm --impls normkit,native,compile --dtypes fp32 \
    --shapes 4096x65536,1024x262144 --markdown --json "$OUT/bench_ln_fp32.json" 2>&1 | tee "$L/bench.log" | tail -40
pack_logs
