#!/usr/bin/env bash
# Device run ZS (session 10, nvidia-h200-x2): fewer instructions an element, forward and backward.
# Count (PTX for sm_90 as launched, bf16, tools/ptx_stats.py and the same compile):
# - forward: the weight offset's add only when the offset is not 0 (HAS_WEIGHT_OFFSET; LayerNorm
#   never has one, RMSNorm's default is 0): LayerNorm 1 × 4096 on 8 warps 321 → 303 instructions a
#   thread (run ZO: the forward is issue-bound), RMSNorm 234 → 216, the same registers (40, 36).
# - backward, whole-row tiles: dweight's sum without the select (rows past the end load h = dy = 0
#   and get mean = rstd = 0: they add 0 as they are) and dh = g·rstd − c₂·rstd − ĥ·(c₁·rstd)
#   (two FMAs an element, the row factors once a row): LayerNorm 2 × 2048 on 8 warps 641 → 607
#   a row block, RMSNorm 502 → 480; registers the same or fewer on the 1024-8192 tiles (the fused
#   add's 122 → 128 still fits its 4 and 2 an SM).
# Prediction: LayerNorm forward 16384×4096 −0.5 to −1.5 µs (68.9 in run ZQ with EVEN_ROWS; 95 % of
# copy needs ~67.5); LayerNorm backward 16384×2048 −0.5 to −2 µs (55.7 in run ZR; 90 % ≈ 53.4);
# the others within ±0.5.
# GPU 0: A/B against HEAD's build (base_build/, by hand), 3 rounds, bf16 every family at
#   16384×1024 / ×2048 / ×4096 / ×8192, fp32 LayerNorm 16384×4096.
# GPU 1: the GPU tests of launch (check mode), ops, split rows and every heuristic configuration;
#   then LayerNorm's forward tiles at 16384×4096 and ×2048 swept again on the new build.
# Outcome (A/B, 3 rounds): LayerNorm forward ×4096 69.2 → 68.5, ×2048 −0.4; LayerNorm backward
# ×8192 −2.6, ×4096 −0.5, ×2048 −0.2; but RMSNorm forward ×8192 +1.7 (ptxas: 32 → 40 registers
# without the add) and LayerNorm fp32 backward ×4096 +6.0. GPU tests 253 passed. Run ZS's sweep
# ranked LayerNorm's forward 2 × 4096 on 16 warps first (67.3 against 68.1) — without the
# statistics stored (tools/tune.py's forward then; run ZT measured that tile +5.2 µs in bf16).
source tools/device_env.sh
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  ab_summarised 3 $ROOT/base_build $ROOT "|all|bf16|16384x1024,16384x2048" \
      "_wide|all|bf16|16384x4096,16384x8192" "_fp32|layer_norm|fp32|16384x4096"
) &
(
  export CUDA_VISIBLE_DEVICES=1
  checked_tests 380 tests/test_launch.py tests/test_ops.py tests/test_split_rows.py \
      tests/test_properties.py::test_every_gpu_heuristic_config
  timeout 90 python3 tools/tune.py --kind fwd --family layer_norm --shapes 16384x4096,16384x2048 \
      --json $L/tune_fwd_ln.json > $L/tune_fwd_ln.log 2>&1
  echo "tune rc=$?"; grep -A4 "heuristic" $L/tune_fwd_ln.log | cut -c1-200
) &
wait
pack_logs
