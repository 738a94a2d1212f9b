#!/usr/bin/env bash
# Device run X (session 6, nvidia-h200-x2): the final build side by side (every family, BENCHMARKS.md's
# "Current numbers") on GPU 0 while GPU 1 runs the GPU test files.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 200 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
) &
gpu_tests_on 1 330 &
wait
pack_logs
