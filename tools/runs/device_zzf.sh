#!/usr/bin/env bash
# Device run ZZF (session 12, nvidia-h200-x2): this session's build — staged short-row backward
# tiles (run ZZE's sweep), whole-row forwards with L2 evict_first but for the fused add (run ZZD),
# fp32 RMSNorm / LayerNorm backward ×4096 on a plain 1 × 4096 tile (run ZZD) — A/B'd, side by side
# and checked.
# GPU 0: A/B against main before this session (78a3676), 2 rounds, every family bf16 at 524288×128
#   and 262144×256. Prediction (run ZZE's sweep): RMSNorm ×128 114 → ~102 µs, ×256 157 → ~101;
#   LayerNorm ×128 136 → ~108; fused add ×128 171 → ~131; LayerNorm and fused add ×256 (by analogy,
#   not swept) −30 % or more. Then every family side by side (normkit, native, compile, Liger):
#   BENCHMARKS' current numbers.
# GPU 1: the GPU test files (run ZZE's were red: the forward's column tiles did not compile with
#   evict_first's default argument — fixed), then racecheck over every staged tile (ones3).
# Outcome (A/B medians of 2 rounds, µs): backward RMSNorm 524288×128 114.3 → 101.2, 262144×256
# 155.6 → 101.3; LayerNorm 135.9 → 104.0, 223.7 → 102.3; fused add 170.2 → 131.7, 182.3 → 135.7.
# Forwards of short rows lost with evict_first (LayerNorm ×128 68.1 → 71.1, RMSNorm 66.8 → 68.1,
# ×256 +0.3 / +0.6): evict_first now only on rows of ≥ 2048 (run ZZG). Side by side (copy 4249
# GB/s): BENCHMARKS' current numbers. GPU tests: 220 passed, 0 failed (cut by the limit at 61 %;
# fwd 20/20, bwd 33/33 heuristic configurations); racecheck over the staged tiles: 34 runs, 0
# hazards (cut by its limit).
source tools/device_env.sh
# main at 78a3676 travels as .ab_base (carried, git-ignored): made with
#   git archive 78a3676 normkit pyproject.toml | tar x -C .ab_base
mkdir -p /tmp/ab/base && cp -r .ab_base/normkit .ab_base/pyproject.toml /tmp/ab/base/
mkdir -p /tmp/ab/new && cp -r normkit pyproject.toml /tmp/ab/new/
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench_rounds 2 /tmp/ab/base /tmp/ab/new "|all|bf16|524288x128,262144x256"
  python3 tools/ab_summary.py "$L" | tee "$L/ab_summary.txt"
  side_by_side 300
) &
(
  export CUDA_VISIBLE_DEVICES=1
  gpu_tests_on 1 330
  ( OUT=$L RACECHECK_LIMIT=80 FAMILIES=rms,layer_norm,fused_add bash tools/device_reliability.sh racecheck_only )
) &
wait
pack_logs
