#!/usr/bin/env bash
# Device run ZZD (prepared in session 11 for the next session's first device minutes,
# nvidia-h200-x2): the two experiment patches, each A/B'd against main, 3 rounds alternated.
#  - docs/experiments/forward-evict-first.patch (GPU 0): whole-row forwards with L2 evict_first on
#    x/residual loads and y/residual_out stores. Prediction: 0 to −1.5 µs at 16384×4096 (LayerNorm
#    forward 67.8-68.7 now, 95 % needs ≤ ~66.7); backward unchanged (control).
#  - docs/experiments/fp32-plain-4096-backward.patch (GPU 1): fp32 RMSNorm / LayerNorm backward
#    rows of 4096 on a plain 1 × 4096 tile, 8 warps, 2 an SM. Prediction (run ZY's sweep):
#    RMSNorm 199-201 → ~192 µs, LayerNorm 195-198 → ~195.
# Then GPU 1: the 20-run bitwise tests on the GPU (RELIABILITY "Session 11": open), and the
# 524288×128 backward sweep with staged tiles (cut in run ZY).
# Outcome (session 12; A/B medians of 3 rounds, µs; copy 4195 GB/s): evict_first — LayerNorm bf16
# fwd ×2048 35.3 → 34.3, ×4096 69.1 → 68.0, ×8192 133.8 → 133.0; RMSNorm ×2048 35.2 → 34.1, ×4096
# 68.1 → 67.8; fused add ×4096 134.6 → 135.7 (worse); backwards ±0.4 (control). Landed without the
# fused add (00ecfb9); the patch as written also broke the forward's column tiles (a str default
# of a @triton.jit helper's constexpr does not compile: run ZZE's GPU tests, and the CPU's
# test_gpu_compile), fixed on landing. fp32 plain 1 × 4096 backward — RMSNorm 200.3 → 191.9,
# LayerNorm 196.9 → 195.2: landed. (`patch` applied its config hunk and rejected the test hunk,
# tests not being copied, so "patch failed" was printed; the measured arm had the config change.)
# Bitwise tests on the GPU: 3 passed. The 524288×128 staged sweep (cut at 150 s): 16 rows × 128 on
# 1 warp, 4/SM, 3 stages 101.5 µs against the heuristic's ~116 — run ZZE follows it up.
source tools/device_env.sh
build() {  # NAME [PATCH]: main's normkit (+ PATCH) in /tmp/ab/NAME
  mkdir -p /tmp/ab/$1 && cp -r normkit pyproject.toml /tmp/ab/$1/
  if [ -n "$2" ]; then
    (cd /tmp/ab/$1 && { patch -s -p1 < "$OLDPWD/$2" || git apply "$OLDPWD/$2"; }) || echo "patch $2 failed"
  fi
}
build base; build evict docs/experiments/forward-evict-first.patch; build fp32 docs/experiments/fp32-plain-4096-backward.patch
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench_rounds 3 /tmp/ab/base /tmp/ab/evict "|layer_norm|bf16|16384x2048,16384x4096,16384x8192" \
      "_rms|rms|bf16|16384x2048,16384x4096" "_fused|fused_add|bf16|16384x4096"
) &
(
  export CUDA_VISIBLE_DEVICES=1
  ab_bench_rounds 3 /tmp/ab/base /tmp/ab/fp32 "_fp32|layer_norm|fp32|16384x4096" "_fp32rms|rms|fp32|16384x4096"
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_reliability.py -k bitwise > $L/bitwise.log 2>&1
  echo "bitwise rc=$? $(tail -1 $L/bitwise.log)"
  timeout 150 python3 tools/tune.py --kind bwd --family rms --shapes 524288x128 --split no --prefetch no \
      --async-stages 2,3 --ppsm 2,4 --each --json $L/tune_qk.json > $L/tune_qk.log 2>&1
  echo "tune qk rc=$?"; grep -A4 heuristic $L/tune_qk.log | cut -c1-200
) &
wait
python3 tools/ab_summary.py "$L" | tee "$L/ab_summary.txt"
pack_logs
