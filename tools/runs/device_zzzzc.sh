#!/usr/bin/env bash
# Device run ZZZZC (prepared in session 18 for nvidia-h200-x2; session 19 had only single H200s lent, so
# it runs as two calls on one GPU: `bash tools/runs/device_zzzzc.sh ab` (~7 min), then, if the patch wins,
# `bash tools/runs/device_zzzzc.sh tests` (~9 min); carry [".whl"]):
# docs/experiments/backward-dweight-unmasked.patch — the dweight / dbias partials' terms without the
# tl.where on the mask (bitwise the same partials; ptx_stats --sass, sm_90: the row loop's SASS
# 9-17 % fewer instructions in every backward tile; RMSNorm's / the fused add's bf16 1 × 4096 split
# parts spill 20 / 44 B with it, none before).
#  - ab: A/B main → patched, 2 rounds, backward: RMSNorm bf16 16384×2048 / 16384×8192 (whole rows)
#    and 4096×16384 … 2048×131072 (split); the fused add bf16 16384×4096, 8192×32768, 4096×65536;
#    LayerNorm bf16 16384×4096, 4096×16384 … 2048×131072; fp32 RMSNorm / LayerNorm 4096×16384,
#    4096×65536.
#  - tests: the patched copy's GPU tests in check mode (every split / heuristic configuration forced
#    against float64, test_split_rows, the bitwise tests, the NaN / eps = 0 tests), then memcheck over
#    every split backward configuration.
# Count: the split parts issue 0.45-0.51 instructions a cycle a scheduler (run ZZZU), LayerNorm's
# near issue-bound; the whole rows at 87 % of DRAM issue 0.40.
# Prediction: LayerNorm's split shapes −5 to −10 % (its loop −13 %), RMSNorm 2 × 2048 / fp32 −3 to −8 %,
# RMSNorm / the fused add bf16 32768-131072 ±3 % (the spills against the selects), whole rows ±1 %
# (not issue-bound). Tests 0 failed, memcheck 0 errors.
# Outcome (session 19, one H200, 261 + 493 s): A/B main → patched (2 rounds, bwd µs): RMSNorm bf16
# 8192×32768 465.5 → 445.4, 4096×65536 474.2 → 454.5, 2048×131072 503.3 → 469.6 (−4 to −7 %, the
# spills notwithstanding), 4096×16384 126.2 → 124.1; the fused add 641.1 → 620.9, 656.2 → 635.4 (−3 %),
# 16384×4096 128.8 → 128.4; LayerNorm 4096×65536 543.9 → 514.0 (−5.5 %), 8192×32768 529.0 → 513.7,
# 4096×16384 137.0 → 136.3, 2048×131072 565.4 → 567.0 (+0.3 %); fp32 RMSNorm 4096×65536 867.4 → 858.0,
# LayerNorm 933.6 → 920.7, 4096×16384 −1 %; whole rows (16384×2048 / 8192 / 4096) ±0.6 %; forwards
# ±1 %. Prediction: LayerNorm right in size except at 131072 (no gain), RMSNorm's 1 × 4096 parts
# gained where ±3 % was predicted (the spill costs less than the selects). Tests (check mode) 269
# passed, 0 failed; every heuristic configuration run (fwd 32/32, bwd 39/39); memcheck split bwd 35
# runs, 0 errors (then out of its 120 s; run ZZZZE went on). Landed: design change 18.
source tools/device_env.sh
P=/tmp/ab/unmasked
patched_copy $P docs/experiments/backward-dweight-unmasked.patch
LOGS=$L
export CUDA_VISIBLE_DEVICES=0
case ${1:?ab or tests} in
ab)
  ( export L=$LOGS/ab; mkdir -p "$L"
    # at most 3-4 shapes a spec: ab_bench_rounds gives each bench call 60 s
    ab_summarised 2 "$PWD" "$P" "_r|rms|bf16|16384x2048,16384x8192,4096x16384" \
        "_s|rms|bf16|8192x32768,4096x65536,2048x131072" "_a|fused_add|bf16|16384x4096,8192x32768,4096x65536" \
        "_l|layer_norm|bf16|16384x4096,4096x16384,8192x32768" "_m|layer_norm|bf16|4096x65536,2048x131072" \
        "_f|rms,layer_norm|fp32|4096x16384,4096x65536" ) ;;
tests)
  ( cd $P && export PYTHONPATH=/tmp/site:$PWD
    TESTS_LOG=unmasked checked_tests 400 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
        -k "gpu_heuristic_config or test_split_rows or bitwise or nonfinite or eps_zero"
    memcheck_split bwd 120 ) ;;
esac 2>&1 | tee "$LOGS/run.log"
pack_logs
