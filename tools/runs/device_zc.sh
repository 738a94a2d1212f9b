#!/usr/bin/env bash
# NOTE: the A/B half compared the working tree with itself (`python3 -m normkit` puts the working
# directory first on sys.path); void, redone in tools/runs/device_zd.sh. The side-by-side half is valid:
# BENCHMARKS.md's current numbers.
# Device run ZC (session 7, nvidia-h200-x2): the build to land, checked and measured.
#  - Forward tile at N = 2048 for every family: 1 row × 4 warps (run ZB's sweep). A/B against HEAD's
#    build (base_build/, made by hand: mkdir base_build && git archive HEAD normkit | tar x -C
#    base_build; not committed), alternated twice on GPU 0. Prediction: forward 16384×2048 LayerNorm
#    −5 %, fused add −2 %, RMSNorm −1 %; backward unchanged except the one-launch finisher (run ZA).
#  - Then every family side by side (normkit, native, compile, Liger): BENCHMARKS' current numbers.
# GPU 1: compile_check, the GPU test files, and memcheck of LayerNorm's backward configurations
# (the finisher now finishes dweight and dbias in one launch).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  for round in 1 2; do
    for build in base new; do
      P=/tmp/site:$PWD; [ $build = base ] && P=/tmp/site:$PWD/base_build
      PYTHONPATH=$P timeout 60 python3 -m normkit bench --family all --impls normkit --dtypes bf16 \
          --shapes 16384x2048,4096x2048,32768x2048 --json $L/ab_${build}_$round.json > $L/ab_${build}_$round.log 2>&1
      echo "== $build round $round (rc=$?)"
    done
  done
  timeout 300 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
) &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 100 python3 tools/compile_check.py > $L/compile_check.log 2>&1
  echo "compile_check rc=$? $(grep -c '^ok' $L/compile_check.log) ok; $(grep '^FAIL' $L/compile_check.log | head -3)"
  OUT=$L TESTS_LIMIT=280 bash tools/device_reliability.sh gpu_tests
  OUT=$L FAMILIES=layer_norm WIDTHS=lo MEMCHECK_LIMIT=90 bash tools/device_reliability.sh memcheck_bwd
) &
wait
pack_logs
