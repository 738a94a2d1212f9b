#!/usr/bin/env bash
# Device run ZZZV (prepared in session 17 for the next session, nvidia-h200-x2, ~7 min; carry [".whl"]):
# docs/experiments/backward-split-rms-without-sum-g.patch — RMSNorm's and the fused add's split parts
# stop computing, sending and awaiting Σg (their dh has no Σg term; results bitwise unchanged). Applied
# to a copy in /tmp/ab/sumg; the base is this checkout.
#  - GPU 0: A/B, 3 rounds, backward: RMSNorm bf16 4096×16384 … 2048×131072, the fused add bf16
#    4096×16384 / 8192×32768 / 2048×131072, RMSNorm fp32 4096×16384 / 4096×65536; control LayerNorm bf16
#    8192×32768 (its code unchanged).
#  - GPU 1: the patched copy's GPU tests, launcher in check mode (every split backward configuration
#    forced against float64, tests/test_split_rows.py, the 20-run bitwise tests), then memcheck over
#    every split backward configuration.
# Count (ptx_stats, the patch's header): bf16 RMSNorm 2 × 2048 parts 254 → 236 registers, 10 → 7
# bar.sync; 1 × 4096 reloading 224 → 211, 14 → 11; 1 × 4096 at 131072 255 + 16 B spilled → 224; fp32
# 162 → 148, 6 → 3. A row block of 1 × 4096 bf16 moves 24 KB (x, dy, dx): ~1.5 µs of an SM's share of
# 4250 GB/s with two parts an SM; a block-wide reduction round is ~0.1-0.3 µs of latency a warp waits.
# Prediction: −1 to −4 % on RMSNorm / the fused add split shapes (most where a reduction is a larger
# share: 4096×16384 and fp32), control ±1 %; tests 0 failures, memcheck 0 errors.
# Outcome: (fill in after the run)
source tools/device_env.sh
P=/tmp/ab/sumg
mkdir -p $P && cp -r normkit tools tests pyproject.toml $P/ && \
  (cd $P && patch -p1 -s < "$OLDPWD/docs/experiments/backward-split-rms-without-sum-g.patch") || echo "patch failed"
(
  export CUDA_VISIBLE_DEVICES=0
  ab_summarised 3 "$PWD" "$P" "_rb|rms|bf16|4096x16384,8192x32768,4096x65536,2048x131072" \
      "_ab|fused_add|bf16|4096x16384,8192x32768,2048x131072" "_rf|rms|fp32|4096x16384,4096x65536" \
      "_lb|layer_norm|bf16|8192x32768"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  cd $P && export PYTHONPATH=/tmp/site:$PWD
  TESTS_LOG=sumg checked_tests 300 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "gpu_heuristic_config and bwd and split or test_split_rows or bitwise"
  memcheck_split bwd 200
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
