#!/usr/bin/env bash
# Device run ZH (session 8, nvidia-h200-x2): the build to land, measured and checked.
#  - RMSNorm's whole-row backward no longer computes Σg (μ = 0: c₁ = rstd·Σ(g·h)/N; session 6's
#    "no change" was one of the void A/Bs); joined sums stay LayerNorm's (run ZF), on one-row tiles
#    and, for 4-byte elements, 2 × 4096 (run ZG: LayerNorm fp32 204.1 → 197.2); the fused add's
#    N = 1024 tile is 2 rows × 4 warps, 4/SM (run ZG: 39.9 → 37.2).
#    Prediction (A/B against HEAD's build, base_build/, made by hand: mkdir base_build && git archive
#    HEAD normkit pyproject.toml | tar x -C base_build; not committed): RMSNorm bwd 16384×1024 −1-2 µs
#    (8 → 5 bar.sync), ×4096 −1-3, fused add 16384×8192 ≈ −14 (run ZF's joined figure or better),
#    ×1024 ≈ −2.7, LayerNorm 16384×8192 −4.8, fp32 ≈ −7, LayerNorm bf16 ×1024/×4096 unchanged.
# GPU 0: every family side by side (normkit, native, compile, Liger): BENCHMARKS' current numbers;
#   then memcheck over RMSNorm's and the fused add's backward configurations.
# GPU 1: the A/B (2 rounds), then the GPU test files (every heuristic configuration compiled).
source tools/device_env.sh
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 300 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
  FAMILIES=rms,fused_add WIDTHS=lo MEMCHECK_LIMIT=100 OUT=$L bash tools/device_reliability.sh memcheck_bwd
) &
(
  export CUDA_VISIBLE_DEVICES=1
  ab_bench 2 16384x1024,16384x4096,16384x8192 $ROOT/base_build $ROOT
  python3 tools/ab_summary.py $L | tee $L/ab_summary.txt
  OUT=$L TESTS_LIMIT=400 bash tools/device_reliability.sh gpu_tests
) &
wait
pack_logs
