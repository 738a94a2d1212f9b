#!/usr/bin/env bash
# Record of a reverted experiment: the forward PREFETCH option it swept was removed after this run
# (no prefetching tile beat the heuristic); on main, --prefetch applies to the backward only.
# Device run ZB (session 7, nvidia-h200-x2): the forward's new PREFETCH option (persistent programs,
# the next row block's x and residual loaded before this block's reductions; weight and bias loaded
# once a program) swept against the heuristic's one-row-a-program tiles. Why: run ZA measured
# LayerNorm's forward at 16384×4096 73.3-73.8 µs (86 % of copy; 69.6 in run X) with both tiles and a
# weight-load reorder making no difference: a program's row is latency-bound (load, two block
# reductions, store) and only ~6 rows an SM are in flight. ptxas (sm_90): prefetch doubles the
# registers (1 × 4096, 8 warps: LayerNorm 40 → 80, 6 → 3 programs an SM), so it may not win.
# Prediction: LayerNorm 16384×4096 ≤ 68 µs (≥ 93 %), RMSNorm and the fused add 1-3 % faster.
# GPU 0: LayerNorm 16384×4096, ×8192, ×2048, fused add ×4096. GPU 1: RMSNorm ×4096, ×2048, ×8192, fused add ×2048.
source tools/device_env.sh
sweep() {  # family shape: tiles of 4096-8192 elements, prefetching ones with 1-6 programs an SM
  timeout 140 python3 tools/tune.py --kind fwd --family $1 --dtype bf16 --prefetch also --max-tile 8192 \
      --ppsm 1,2,3,4,6 --shapes $2 --json $L/tune_fwd_$1_$2.json > $L/tune_fwd_$1_$2.log 2>&1
  echo "tune fwd $* rc=$?"; grep -A5 heuristic $L/tune_fwd_$1_$2.log; grep -i "error\|mismatch" $L/tune_fwd_$1_$2.log | head -3
}
(
  export CUDA_VISIBLE_DEVICES=0
  for shape in 16384x4096 16384x8192 16384x2048; do sweep layer_norm $shape; done
  sweep fused_add 16384x4096
) &
(
  export CUDA_VISIBLE_DEVICES=1
  for shape in 16384x4096 16384x2048 16384x8192; do sweep rms $shape; done
  sweep fused_add 16384x2048
) &
wait
pack_logs
