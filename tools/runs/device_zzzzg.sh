#!/usr/bin/env bash
# Device run ZZZZG (session 19, nvidia-h200, ~1-2 min; carry [".whl"]): run ZZZZF again (is its
# 4-6 % real or one sweep's noise?) and the same 16-warps-an-SM parts on the shapes it left out —
# the fused add 2048×131072 (1 × 8192 parts on 8 warps, one an SM), RMSNorm 1024×262144, LayerNorm
# bf16 4096×65536 / 2048×131072 (2 × 2048 on 4 warps, two an SM; capped 8-warp parts lost there in
# run ZZZG, before design changes 17-18).
# Prediction: ZZZZF's winners within ±1 % of their first times; LayerNorm's capped parts still lose
# (near issue-bound: more warps do not add issue slots).
# Outcome (25 s): ZZZZF's within 0.5 % (RMSNorm 4096×65536 449.4 / 475.8 / 430.7, 2048×131072 464.1 /
# 436.8 / 470.7; the fused add 4096×65536 628.8 / 636.1 / 599.6); RMSNorm 1024×262144 502.1 / 514.5 /
# **469.8**; the fused add 2048×131072 (heuristic 1 × 8192 on 8) 638.1 / **617.6** / 650.4; LayerNorm
# loses with every 16-warp part (4096×65536 509.5 against 619.5-716.1, 2048×131072 564.1 against
# 630.5-769.5): prediction right. → tools/runs/device_zzzzh.sh's A/B.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
tune_sweep bwd rms bf16 4096x65536,2048x131072,1024x262144 80 1x4096:8:split:pf:p2:r128 1x2048:4:split:pf:p4:r128
tune_sweep bwd fused_add bf16 4096x65536,2048x131072 60 1x4096:8:split:pf:p2:r128 1x2048:4:split:pf:p4:r128
tune_sweep bwd layer_norm bf16 4096x65536,2048x131072 60 2x2048:8:split:pf:p2:r128 1x2048:4:split:pf:p4:r128 1x4096:8:split:pf:p2:r128
