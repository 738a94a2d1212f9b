#!/usr/bin/env bash
# Device run ZL (session 9, nvidia-h200-x2): the backward's grid fitted to the compiled kernel.
# Run ZK found LayerNorm fp32 16384×4096 at 211.8 µs against 197 on a tile asking for 2 programs an
# SM where ptxas gives it 172 registers: one fits, so half the persistent programs start only when
# the others have finished all their rows (two waves). tools/ptx_stats.py finds main's heuristic
# doing the same for 4-byte elements: the fused add's 1 × 2048 on 4 warps (158 registers: 3 of 4
# fit) and 1 × 4096 on 8 warps (168: 1 of 2). ops.launch_bwd now asks the compiled kernel
# (launch.launch_fitted → config.resident_programs) and launches at most the programs that fit.
# Prediction: fp32 fused add 16384×2048 and ×4096 faster by up to a third (the second wave gone);
# every bf16 row unchanged (their tiles fit: ptxas 117-128 registers), except RMSNorm ×1024 −0.9 µs
# (the 2 × 1024 tile on 4 warps, 4 an SM, now RMSNorm's and LayerNorm's too: run ZK's A/B) and
# LayerNorm ×4096 −0.6 (its own 1 × 4096 tile, bf16 only).
# GPU 0: A/B against HEAD's build (base_build/: mkdir base_build && git archive HEAD normkit
#   pyproject.toml | tar x -C base_build), 2 rounds, bf16 16384×1024 / ×2048 / ×4096 every family,
#   fp32 the same shapes every family.
# GPU 1: (1) the fused add's fp32 tiles swept again now that the grid fits (--ppsm 1,2,3,4);
#   (2) the GPU tests of the launcher (fast path in check mode, launch_fitted's grid), the ops
#   (the new grid test), every heuristic configuration and split rows.
source tools/device_env.sh
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  AB_FP32_FAMILY=all AB_FP32_SHAPES=16384x1024,16384x2048,16384x4096 \
      ab_bench 2 16384x1024,16384x2048,16384x4096 $ROOT/base_build $ROOT
  python3 tools/ab_summary.py $L | tee $L/ab_summary.txt
) &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 150 python3 tools/tune.py --kind bwd --family fused_add --dtype fp32 --shapes 16384x2048,16384x4096 \
      --prefetch only --joined also --split no --ppsm 1,2,3,4 --max-tile 8192 --json $L/tune_fused_add_fp32.json \
      > $L/tune_fused_add_fp32.log 2>&1
  echo "tune rc=$?"; grep -A3 "heuristic" $L/tune_fused_add_fp32.log | cut -c1-220
  NORMKIT_FAST_LAUNCH=check NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 250 python3 -m pytest -q -p no:cacheprovider -rfE \
      -W ignore::DeprecationWarning tests/test_launch.py tests/test_ops.py tests/test_split_rows.py \
      tests/test_properties.py -k "launch or grid or fit or split or heuristic or bitwise or deterministic" \
      > $L/tests.log 2>&1
  echo "tests rc=$? $(tail -1 $L/tests.log)"; grep -E "^(FAILED|ERROR)|configurations" $L/tests.log | head
) &
wait
pack_logs
