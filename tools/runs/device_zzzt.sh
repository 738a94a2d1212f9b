#!/usr/bin/env bash
# Device run ZZZT (prepared in session 17 for the next session, nvidia-h200-x2, ~4 min; carry [".whl"]):
# docs/experiments/backward-contiguous-rows.patch — the backward's persistent programs take contiguous
# ranges of row blocks (Liger's way) instead of every G-th (":cont"). Applied to a copy in /tmp/ab/cont.
#  - GPU 0: sweeps (tools/tune.py --config, the heuristic in the same process): the fused add fp32
#    4096×16384 whole rows on 16 / 32 warps with and without contiguous ranges (Liger 286 µs; normkit's
#    split parts 301, its whole row 345.5 in session 16); the same bf16; RMSNorm / LayerNorm fp32
#    16384×4096 on their plain 1 × 4096 tiles (8 warps, two an SM) with and without. (Session 18:
#    the capped reloading bf16 parts dropped — design change 17 stopped the reloading there.)
#  - GPU 1: the patched copy's forced-configuration tests against float64 on the GPU (launcher in
#    check mode) and its refusals. (tests/test_split_rows.py with the per-head reload case ran in ZZZZ.)
# Count: the fused add fp32 4096×16384 moves 4 × 256 MiB = 1.07 GB → 253 µs at 4250 GB/s.
# Prediction: unknown in sign — if the dealing is what separates normkit's whole row (345.5) from
# Liger's (286), the contiguous whole row lands near 290; otherwise within ±3 % of the cyclic one.
# Outcome (session 18, on design change 17's tree): the fused add fp32 4096×16384 whole row 345.2 →
# 337.1 µs with contiguous ranges on 16 warps (32 warps 365.2 → 346.3), bf16 193.2 → 191.4 — both far
# from the split parts' 283.2 (Liger 286); RMSNorm / LayerNorm fp32 16384×4096 lose with them (191.3
# → 206.2, 194.6 → 206.7). Not landed. The patch's GPU tests: 17 passed.
source tools/device_env.sh
P=/tmp/ab/cont
patched_copy $P docs/experiments/backward-contiguous-rows.patch
(
  export CUDA_VISIBLE_DEVICES=0
  cd $P && export PYTHONPATH=/tmp/site:$PWD
  sweep() { tune_sweep bwd "$1" "$2" "$3" 100 "${@:4}"; }  # family dtype shapes configs...
  sweep fused_add fp32 4096x16384 1x16384:16 1x16384:16:cont 1x16384:32 1x16384:32:cont
  sweep fused_add bf16 4096x16384 1x16384:16 1x16384:16:cont
  sweep rms fp32 16384x4096 1x4096:8:p2 1x4096:8:p2:cont
  sweep layer_norm fp32 16384x4096 1x4096:8:p2 1x4096:8:p2:cont
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  cd $P && export PYTHONPATH=/tmp/site:$PWD
  TESTS_LOG=contiguous checked_tests 200 tests/test_ops.py -k "forced or backward_options"
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
