#!/usr/bin/env bash
# Device run ZX (session 11, nvidia-h200-x2): the backward's row loop with its loads staged in
# shared memory by Triton's software pipeliner (async_stages / ASYNC_STAGES: tl.range(num_stages=K)).
# Found on the CPU: Triton pipelines a loop's plain loads (cp.async into shared memory) only when
# the loop itself carries num_stages — the launch option alone left the row loop unpipelined, so
# design change 5's "num_stages did not overlap them" never ran a pipelined loop. Count (ptxas,
# LayerNorm bf16): 2 × 2048 on 8 warps, 3 stages: 128 registers (prefetch: 128), 32 KB shared, two
# row blocks in flight a program against prefetch's one; 1 × 2048 on 8 warps, 3-4 stages: 80
# registers, 3 programs an SM, 16-24 KB shared (72 KB in flight an SM against 32 KB).
# Prediction: more bytes in flight per SM at equal occupancy: LayerNorm 16384×2048 55 → ~52-53 µs
# (≥ 90 %); RMSNorm ×1024 / ×2048 the same direction.
# GPU 0: tools/tune.py sweeps (whole-row tiles, plain / prefetch / async 2-4, 2-4 programs an SM):
#   LayerNorm 16384×2048, RMSNorm 16384×2048. GPU 1: RMSNorm 16384×1024, LayerNorm 16384×4096.
# Outcome (copy 4149-4229 GB/s; heuristic = the prefetching tile in the same sweep): 3 stages won
# all four — LayerNorm 16384×2048 52.7 µs (2 × 2048, 4 warps) against 55.0, ×4096 102.1 (2 × 4096,
# 8 warps) against 105.6; RMSNorm ×1024 28.0 (4 × 1024, 4 warps, 2 an SM) against 29.6, ×2048
# 51.4-51.8 against 53.2. Two stages lost to prefetch everywhere; four was close to three.
source tools/device_env.sh
sweep() {  # FAMILY SHAPE
  timeout 270 python3 tools/tune.py --kind bwd --family $1 --shapes $2 --split no --prefetch also --async-stages 2,3,4 \
      --ppsm 2,3,4 --max-tile 8192 --each --json $L/tune_$1_$2.json > $L/tune_$1_$2.log 2>&1
  echo "tune $1 $2 rc=$?"; grep -A6 "heuristic" $L/tune_$1_$2.log | cut -c1-220
}
(
  export CUDA_VISIBLE_DEVICES=0
  sweep layer_norm 16384x2048
  sweep rms 16384x2048
) &
(
  export CUDA_VISIBLE_DEVICES=1
  sweep rms 16384x1024
  sweep layer_norm 16384x4096
) &
wait
pack_logs
