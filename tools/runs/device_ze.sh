#!/usr/bin/env bash
# Device run ZE (session 7, nvidia-h200-x2). GPU 0: A/B of programmatic dependent launch for the
# dweight/dbias finisher against HEAD's build (base_build/: mkdir base_build && git archive HEAD
# normkit | tar x -C base_build; not committed), three alternated rounds, each build run from its
# own directory. Count: the finisher moves ~2-4 MB through L2 (~1 µs) but costs ~2 µs in a graph:
# its launch and ramp sit between the backward's last program and its own loads. With PDL its
# programs are placed as the backward's exit and wait in griddepcontrol.wait. Prediction: every
# backward with a weight −0.5-1 µs (16384×4096 LayerNorm 108 → ≤ 107.5; 4096×2048 −3-5 %).
# GPU 1: a LayerNorm backward sweep at N = 2048 and 1024 (84 % / 72 % of copy: the weakest
# LayerNorm shapes), then the GPU test files on the new build.
source tools/device_env.sh
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench 3 16384x1024,16384x2048,4096x2048,16384x4096,16384x8192 $ROOT/base_build $ROOT
) &
(
  export CUDA_VISIBLE_DEVICES=1
  for shape in 16384x2048 16384x1024; do
    timeout 90 python3 tools/tune.py --kind bwd --family layer_norm --dtype bf16 --split no --prefetch also \
        --ppsm 1,2,4 --shapes $shape > $L/tune_ln_$shape.log 2>&1
    echo "tune layer_norm $shape rc=$?"; grep -A5 heuristic $L/tune_ln_$shape.log
  done
  OUT=$L TESTS_LIMIT=240 bash tools/device_reliability.sh gpu_tests
) &
wait
pack_logs
