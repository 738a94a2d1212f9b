#!/usr/bin/env bash
# Device run ZV (session 10, nvidia-h200-x2, the session's last device minutes): the final build.
# Since run ZU: LayerNorm's forward of 4-byte elements at N = 4096 on 2 × 4096, 16 warps (the tile
# run ZT measured for fp32: 133.7 → 130.7 µs, 3 rounds), chosen by the element size.
# GPU 0: LayerNorm side by side (normkit, native, compile, Liger), then fp32 LayerNorm at
#   16384×2048 / ×4096 / ×8192.
# GPU 1: LayerNorm's forward tests of ops and every heuristic configuration (the enumeration now has the
#   forward's 4-byte LayerNorm tile), launcher in check mode.
# Outcome: LayerNorm side by side (copy read ~2 % slow this run): fp32 forward 16384×4096 132-133
# µs against torch.compile's 128 and Liger's 132; bf16 forward ×4096 69.6 (94 %), backward ×4096
# 107, fp32 194-195. Tests 85 passed (forward 20/20, backward 23/23 configurations).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 100 python3 -m normkit bench --family layer_norm --impls normkit,native,compile,liger --markdown \
      --json $L/bench_ln.json > $L/bench_ln.log 2>&1; echo "bench rc=$?"
  timeout 60 python3 -m normkit bench --family layer_norm --dtypes fp32 --shapes 16384x2048,16384x4096,16384x8192 \
      --impls normkit,native,compile,liger --markdown --json $L/bench_ln_fp32.json > $L/bench_ln_fp32.log 2>&1
  echo "bench fp32 rc=$?"
) &
(
  export CUDA_VISIBLE_DEVICES=1
  checked_tests 170 tests/test_properties.py::test_every_gpu_heuristic_config \
      tests/test_properties.py::test_gpu_heuristics_enumeration tests/test_ops.py -k "heuristic or without_masks or weight_offset"
) &
wait
pack_logs
