#!/usr/bin/env bash
# Device run U (session 6, nvidia-h200-x2): LayerNorm's backward on 4-byte rows at N = 4096 gets
# its own tile (2 rows × 8 warps, config._BWD_PREFETCH_LAYER_NORM_FP32, from run T's sweep).
# (Reverted after this run: no gain beyond the spread; BENCHMARKS.md, "Session 6".)
# GPU 0: the LayerNorm family side by side (fp32 16384×4096 predicted ~203 µs, was 211 in run T),
#        the plain RMSNorm shapes at N = 4096 (must not move: their tile did not change), then
#        sweeps: RMSNorm fp32 backward at 16384×4096 (does 8 warps win there too?), LayerNorm fp32
#        again (same-run spread), fused add 16384×2048 (89 % of copy in run T: a ≥ 64 MB shape).
# GPU 1: the GPU test files (the new configuration compiled and checked for real), then memcheck
#        over LayerNorm's backward configurations.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 90 python3 -m normkit bench --family layer_norm --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench_ln.json > $OUT/bench_ln.log 2>&1; echo "bench ln rc=$?"
  timeout 40 python3 -m normkit bench --family rms --shapes 16384x4096 --dtypes bf16,fp32 \
      --impls normkit,compile,liger > $L/bench_rms.log 2>&1; echo "bench rms rc=$?"
  for spec in "rms fp32 16384x4096" "layer_norm fp32 16384x4096" "fused_add bf16 16384x2048"; do
    set -- $spec
    timeout 75 python3 tools/tune.py --kind bwd --family $1 --dtype $2 --split no --prefetch only \
        --ppsm 1,2,4 --shapes $3 > $L/tune_$1_$2_$3.log 2>&1; echo "tune $spec rc=$?"
    grep -A4 heuristic $L/tune_$1_$2_$3.log
  done
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT=$L TESTS_LIMIT=330 bash tools/device_reliability.sh gpu_tests
  OUT=$L FAMILIES=layer_norm WIDTHS=lo bash tools/device_reliability.sh memcheck_bwd
) &
wait
pack_logs
