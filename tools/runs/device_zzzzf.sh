#!/usr/bin/env bash
# Device run ZZZZF (session 19, nvidia-h200, ~4.5 min, the session's last device seconds; carry
# [".whl"]): tools/runs/device_zzzzb.sh's GPU-0 sweep of twice the warps an SM, on main with design
# change 18 — RMSNorm's / the fused add's bf16 wide rows on 1 × 4096 parts of 8 warps capped at 128
# registers (two an SM) or 1 × 2048 on 4 warps capped (four an SM): 16 warps an SM against the
# heuristic's 8 (1 × 4096 parts on 4 warps at 255 registers, two an SM).
# Count (ptx_stats, sm_90, after design change 18): both capped parts 128 registers and 28-32 B
# spilled (0 B before design change 18); the heuristic's parts 255 + 20 / 44 B.
# Prediction: −3 to −8 % at 32768-131072 if the parts wait on latency (long scoreboard 1.24 an
# issue, run ZZZU) more than on issue; a win needs an A/B and the GPU tests before it lands.
# Outcome (23 s): RMSNorm 8192×32768 heuristic 440.6 µs, 1 × 4096 on 8 capped 461.7, 1 × 2048 on 4
# capped 464.4; 4096×65536 450.5 / 480.4 / **432.2**; 2048×131072 465.8 / **437.4** / 471.0; the fused
# add 8192×32768 616.1 / 618.3 / 613.2, 4096×65536 626.9 / 648.1 / **604.9**. Right in size (−4 to −6 %)
# where a part shape wins, but which one depends on the width; nothing at 32768. Confirmed by ZZZZG.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
tune_sweep bwd rms bf16 8192x32768,4096x65536,2048x131072 130 1x4096:8:split:pf:p2:r128 1x2048:4:split:pf:p4:r128
tune_sweep bwd fused_add bf16 8192x32768,4096x65536 110 1x4096:8:split:pf:p2:r128 1x2048:4:split:pf:p4:r128
