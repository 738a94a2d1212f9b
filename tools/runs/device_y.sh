#!/usr/bin/env bash
# NOTE (session 7): this A/B compared the working tree with itself — `python3 -m normkit` puts the
# working directory first on sys.path, so PYTHONPATH=base_build never reached HEAD's copy. Its "no
# change" outcome is void; tools/runs/device_zd.sh runs each build from its own directory.
# Device run Y (session 6, nvidia-h200-x2). An experiment, reverted after it (BENCHMARKS.md,
# "Session 6"): the RMSNorm backward without its Σg reduction (LayerNorm's term; ptxas for sm_90:
# 13 → 10 barriers at N = 2048, 6 → 3 at N = 8192). A/B in one run: base_build/ held HEAD's
# normkit, made by hand before the run (mkdir base_build && git archive HEAD normkit | tar x -C
# base_build), timed alternately with the working tree's on GPU 0. GPU 1: every GPU heuristic
# configuration and the launcher properties compiled and checked with the change.
source tools/device_env.sh
SHAPES=16384x1024,16384x2048,16384x4096,16384x8192,524288x128
(
  export CUDA_VISIBLE_DEVICES=0
  for round in 1 2; do
    for build in base new; do
      P=/tmp/site:$PWD; [ $build = base ] && P=/tmp/site:$PWD/base_build
      PYTHONPATH=$P timeout 60 python3 -m normkit bench --family rms --impls normkit --shapes $SHAPES \
          --dtypes bf16 > $L/ab_${build}_$round.log 2>&1
      echo "== $build round $round (rc=$?)"; grep -E "^(bf16|fp32) " $L/ab_${build}_$round.log | awk '{print $2, "bwd", $7, $8 "%"}'
    done
  done
) &
(
  export CUDA_VISIBLE_DEVICES=1
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 170 python3 -m pytest tests/test_properties.py -q -p no:cacheprovider \
      -rfE -k "every_gpu_heuristic or launchers" > $L/tests.log 2>&1
  echo "tests rc=$? $(tail -1 $L/tests.log)"; grep -E "^(FAILED|ERROR)|heuristics, |missed" $L/tests.log | head
) &
wait
pack_logs
