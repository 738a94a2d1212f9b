#!/usr/bin/env bash
# Device run ZZZZZ (session 23, nvidia-h200): `bash tools/runs/device_zzzzz.sh read` (~1 min) — what torch.compile
# makes of RMSNorm's and LayerNorm's bf16 16384×1024 forward (17.6 / 18.0 µs against normkit's 18.6-19.0 at
# best in run ZZZZX's sweep of 11 tiles): tools/inductor_code.py prints Inductor's kernels, the launch
# configurations its autotuner kept and both forwards timed in one process.
# Count: 67 MB → 15.7 µs at 4263 GB/s; 16384 rows.
# Prediction: a persistent or multi-row kernel (RBLOCK 1024, XBLOCK > 1) with fewer, larger programs.
# Outcome: Inductor's kernel for both is a persistent reduction of one row a program on ONE warp
#   (XBLOCK 1, num_warps 1, num_stages 1, R0_BLOCK 1024: the row's reduction all shuffles, no shared
#   memory, no bar.sync), M and N baked in (no masks, 32-bit offsets), rsqrt, no statistics stored.
#   Same process: RMSNorm normkit 19.9 µs (79 %) against 18.2 (87 %), LayerNorm 18.9 (83 %) against
#   18.1 (87 %). Prediction (multi-row, fewer programs) wrong. normkit's own 1 × 1024 on 1 warp ran 20.0
#   (LayerNorm, run ZZZZX): the tile alone is not it. Counted after (CPU, sm_90 SASS a program): Inductor's
#   kernel 280 instructions, normkit's RMSNorm 1 × 1024 on one warp 384 (360 unmasked; 32 weight-offset
#   adds), LayerNorm 528 (464) — BENCHMARKS "Session 23".
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?read} in
read)
  for family in rms layer_norm; do
    timeout 120 python3 tools/inductor_code.py --family $family --shapes 16384x1024 > "$L/inductor_$family.log" 2>&1
    echo "== $family rc=$?"; grep -vE "^\s*$" "$L/inductor_$family.log" | grep -E "µs|us|config|XBLOCK|RBLOCK|num_warps|def triton|grid|@triton" | head -30
  done ;;
esac
pack_logs
