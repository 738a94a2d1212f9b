#!/usr/bin/env bash
# NOTE: this A/B compared the working tree with itself (`python3 -m normkit` puts the working
# directory first on sys.path); void. Redone correctly in tools/runs/device_zd.sh. The weight-load
# reorder below was reverted: both "builds" carried it and LayerNorm's forward measured 73.3-73.8 µs
# at 16384×4096 against 69.4-70.6 without it (runs X, ZB, ZC).
# Device run ZA (session 7, nvidia-h200-x2): A/B of two changes against HEAD's build, alternated
# in one run on GPU 0 (base_build/ holds HEAD's normkit, made by hand before the run:
# mkdir base_build && git archive HEAD normkit | tar x -C base_build; not committed):
#  - backward: dweight and dbias finished by one launch (sum_partials_kernel's second grid axis)
#    instead of two. Prediction: LayerNorm backward (weight and bias) −1.5-2 µs on every shape
#    (one ~2 µs finisher launch less, BENCHMARKS "design change 7"); RMSNorm unchanged.
#  - forward: weight and bias loaded with x, before the statistics' reductions (PTX: the 4 v4
#    loads moved above the 5 bar.sync of LayerNorm). Prediction: LayerNorm forward 16384×4096
#    69.6 → ≤ 67.5 µs (≥ 94 %), RMSNorm and the fused add 1-2 % faster; ptxas: +8 registers a
#    thread at 4096 (LayerNorm 40 → 48: 6 → 5 programs an SM), so it may also lose.
# GPU 1: tools/compile_check.py and the GPU test files on the new build.
source tools/device_env.sh
SHAPES=16384x1024,16384x2048,16384x4096,16384x8192,4096x2048,8192x32768
(
  export CUDA_VISIBLE_DEVICES=0
  for round in 1 2; do
    for build in base new; do
      P=/tmp/site:$PWD; [ $build = base ] && P=/tmp/site:$PWD/base_build
      PYTHONPATH=$P timeout 75 python3 -m normkit bench --family all --impls normkit --shapes $SHAPES \
          --dtypes bf16 --json $L/ab_${build}_$round.json > $L/ab_${build}_$round.log 2>&1
      echo "== $build round $round bf16 (rc=$?)"
      PYTHONPATH=$P timeout 40 python3 -m normkit bench --family layer_norm --impls normkit --shapes 16384x4096 \
          --dtypes fp32 --json $L/ab_${build}_${round}_fp32.json > $L/ab_${build}_${round}_fp32.log 2>&1
      echo "== $build round $round fp32 (rc=$?)"
    done
  done
) &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 100 python3 tools/compile_check.py > $L/compile_check.log 2>&1
  echo "compile_check rc=$? $(grep -c '^ok' $L/compile_check.log) ok; $(grep '^FAIL' $L/compile_check.log | head -3)"
  OUT=$L TESTS_LIMIT=300 bash tools/device_reliability.sh gpu_tests
) &
wait
pack_logs
