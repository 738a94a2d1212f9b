#!/usr/bin/env bash
# Device run ZZK (prepared in session 12 for the next session, nvidia-h200-x2, ~5 min): two forward
# experiments counted on the CPU, each A/B'd against main, 3 rounds alternated.
#  - GPU 0: docs/experiments/forward-weight-before-x-hat.patch — the weight's tile loaded before x̂
#    is formed: RMSNorm bf16 1 × 4096 35 → 32 registers (6 → 8 programs an SM), 1 × 2048 33 → 32.
#    Prediction: RMSNorm bf16 16384×4096 forward −0.5 to −1.5 µs (67.6 in run ZZF; Liger 66.3),
#    ×2048 ±0.5; LayerNorm, the fused add, fp16, fp32 ±0.3 (registers unchanged: controls).
#  - GPU 1: docs/experiments/forward-rms-8192-no-evict.patch — RMSNorm rows of 8192 without L2
#    evict_first (34 → 32 registers, 3 → 4 programs an SM). Prediction: ±1 µs at 16384×8192.
# Land a patch (`git apply`) only if it wins its A/B; then re-run the CPU tests (both pass them).
# Outcome (run ZZK, 3 rounds, medians, µs): neither lands. Weight before x̂: RMSNorm bf16 16384×4096
# fwd 67.3 → 67.1 (−0.3, inside the spread; predicted −0.5 to −1.5), ×2048 +0.1, fp16 ×4096 −0.6,
# fp32 +0.4 / +0.7, controls ±0.7. RMSNorm 8192 without evict_first: 16384×8192 131.1 → 132.8
# (+1.7), 32768×8192 +0.5 — evict_first stays.
source tools/device_env.sh
build() {  # NAME [PATCH]: main's normkit (+ PATCH) in /tmp/ab/NAME
  mkdir -p /tmp/ab/$1 && cp -r normkit pyproject.toml /tmp/ab/$1/
  if [ -n "$2" ]; then (cd /tmp/ab/$1 && git apply --include='normkit/*' "$OLDPWD/$2") || echo "patch $2 failed"; fi
}
build base; build wfirst docs/experiments/forward-weight-before-x-hat.patch
build noevict docs/experiments/forward-rms-8192-no-evict.patch
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench_rounds 3 /tmp/ab/base /tmp/ab/wfirst "_rms|rms|bf16,fp16,fp32|16384x2048,16384x4096" \
      "_ctl|layer_norm,fused_add|bf16|16384x4096"
) &
(
  export CUDA_VISIBLE_DEVICES=1
  ab_bench_rounds 3 /tmp/ab/base /tmp/ab/noevict "_rms8192|rms|bf16|16384x8192,32768x8192"
) &
wait
python3 tools/ab_summary.py "$L" | tee "$L/ab_summary.txt"
pack_logs
