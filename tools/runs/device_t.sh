#!/usr/bin/env bash
# Device run T (planned for session 6, nvidia-h200-x2): validate the build that landed after run S
# (LayerNorm's own forward tiles) and confirm them side by side.
# GPU 0: the side-by-side benchmark of every family (LayerNorm forward 16384×8192 / 16384×1024
#        expected ~132 / ~19.5 µs from run S's sweep), then >2**31 elements, then LayerNorm's
#        backward swept at 16384×4096 (bf16, fp32).
# GPU 1: the GPU test files (nothing else on that GPU; 330 s was short in run S while GPU 0 swept),
#        then memcheck and racecheck.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 270 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
  timeout 100 python3 tools/check_huge.py > $L/huge.log 2>&1; echo "huge rc=$?"; tail -5 $L/huge.log
  # LayerNorm backward 16384×4096 (issue #4: bf16 87 % of copy, fp32 211 vs ≤ 205 µs): its own sweep
  for dt in bf16 fp32; do
    timeout 70 python3 tools/tune.py --kind bwd --family layer_norm --dtype $dt --split no --prefetch only \
        --ppsm 1,2 --shapes 16384x4096 > $L/tune_ln_$dt.log 2>&1; echo "tune ln bwd $dt rc=$?"
    grep -A3 heuristic $L/tune_ln_$dt.log
  done
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT=$L TESTS_LIMIT=360 SWEEP_LIMIT=30 MEMCHECK_LIMIT=80 bash tools/device_reliability.sh gpu_tests sweep memcheck racecheck
) &
wait
pack_logs
