#!/usr/bin/env bash
# Device run ZD (session 7, nvidia-h200-x2): runs Y, ZA and ZC's A/B compared a build with itself —
# `python3 -m normkit` puts the working directory first on sys.path, so PYTHONPATH=base_build never
# reached HEAD's copy. Here each build runs from its own directory (printed: normkit.__file__).
# base_build/ = HEAD's normkit (mkdir base_build && git archive HEAD normkit | tar x -C base_build;
# not committed). Changes against HEAD: dweight and dbias finished by one launch; the forward tile
# at N = 2048 (1 row × 4 warps, run ZB). Predictions: LayerNorm backward −0.5-2 µs (one ~2 µs
# launch less); forward 16384×2048 LayerNorm −5 %, fused add −2 %, RMSNorm −1 %.
# GPU 1: the GPU test files on the new build (run ZC's copy timed out at 79 %, 0 failures so far).
source tools/device_env.sh
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench 3 16384x2048,4096x2048,16384x4096,16384x8192 $ROOT/base_build $ROOT
) &
gpu_tests_on 1 330 &
wait
pack_logs
