#!/usr/bin/env bash
# Device run ZZZZH (session 19, nvidia-h200, ~2.5 min, the session's last device seconds; carry
# [".whl"]): A/B main (design change 18 in the working tree) → docs/experiments/backward-sixteen-warps-an-sm.patch
# (runs ZZZZF / ZZZZG's sweep winners as the heuristic), 2 rounds, bf16 backward.
# Prediction: RMSNorm 4096×65536 −4 %, 2048×131072 −6 %, 1024×262144 −6 %; the fused add 4096×65536
# −4 %, 2048×131072 −3 %; 8192×32768 unchanged (not in the patch).
# Outcome (75 s, bwd µs, medians of 2): RMSNorm 4096×65536 448.8 → 433.2 (−3.5 %), 2048×131072
# 463.7 → 438.4 (−5.5 %), 1024×262144 505.2 → 472.8 (−6.4 %); the fused add 4096×65536 629.7 → 598.9
# (−4.9 %), 2048×131072 641.8 → 613.8 (−4.4 %); forwards ±1 %. As predicted. Landed as design change
# 19 after ZZZZI's tests.
source tools/device_env.sh
P=/tmp/ab/sixteen
patched_copy $P docs/experiments/backward-sixteen-warps-an-sm.patch
export CUDA_VISIBLE_DEVICES=0 L=$L/ab; mkdir -p "$L"
ab_summarised 2 "$PWD" "$P" "_r|rms|bf16|4096x65536,2048x131072,1024x262144" "_a|fused_add|bf16|4096x65536,2048x131072"
L=${L%/ab}
pack_logs
