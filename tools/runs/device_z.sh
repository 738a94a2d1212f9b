#!/usr/bin/env bash
# Device run Z (planned for session 7, nvidia-h200-x2): does a depth-3 software pipeline (PREFETCH2:
# the next two row blocks in flight) let spill-free 1-row tiles beat the 2-row tiles that spill?
# ptxas (sm_90, CPU): 1 × 4096 on 16 warps with PREFETCH2 — LayerNorm bf16 / fp32 and RMSNorm —
# 128 registers, 0 B spilled, 6 barriers a row block; the heuristic's 2 × 4096 (PREFETCH) spills
# 292 B (LayerNorm bf16) / 332 B (fp32) with 17 / 21 barriers. Same bytes in flight a program.
# Prediction: LayerNorm bf16 16384×4096 ≤ 105 µs (≥ 90 % of copy; heuristic 107-110), fp32 ≤ 205.
# GPU 0: LayerNorm sweeps (bf16 16384×4096, 16384×8192; fp32 16384×4096). GPU 1: RMSNorm bf16
# 16384×1024 / ×2048 / ×4096 and the fused add at 16384×2048 / ×4096, each with --prefetch2.
source tools/device_env.sh
sweep() {  # family dtype shape: tiles of ≤ 8192 elements (1-2 rows at 4096), 1-2 programs/SM, ~40 s
  timeout 100 python3 tools/tune.py --kind bwd --family $1 --dtype $2 --split no --prefetch only --prefetch2 \
      --max-tile 8192 --ppsm 1,2 --shapes $3 > $L/tune_$1_$2_$3.log 2>&1
  echo "tune $* rc=$?"; grep -A5 heuristic $L/tune_$1_$2_$3.log
}
(
  export CUDA_VISIBLE_DEVICES=0
  sweep layer_norm bf16 16384x4096
  sweep layer_norm bf16 16384x8192
  sweep layer_norm fp32 16384x4096
) &
(
  export CUDA_VISIBLE_DEVICES=1
  for shape in 16384x1024 16384x2048 16384x4096; do sweep rms bf16 $shape; done
  for shape in 16384x2048 16384x4096; do sweep fused_add bf16 $shape; done
) &
wait
pack_logs
