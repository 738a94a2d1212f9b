#!/usr/bin/env bash
# Device run ZZO (session 13, nvidia-h200-x2): A/Bs, 3 rounds alternated, builds carried in
# .ab_base (main before this session's forward change) and .ab_new (the change).
#  - GPU 0: the forward's whole rows of ≥ 4096 re-read for y (TileConfig.reload, RELOAD), plain
#    2-byte RMSNorm rows of ≥ 16384 under a 32-register cap, 16 warps on RMSNorm's 16 KB rows of
#    4096 (config._FWD_RELOAD_*; sweeps ZZM / ZZN). Prediction (µs, bf16): RMSNorm ×4096 67.6 →
#    65.6-66.5, ×8192 130.7 → 128-129, 4096×16384 71 → 68, 8192×32768 295 → 260, 131072×8192
#    1150 → 1120; fp32 ×4096 133 → 128; fused add ×4096 133.6 → 128-129, ×8192 263 → 255;
#    LayerNorm ×4096 67.7 → 66.5, ×8192 ±1. Backward (untouched): ±1 %.
#  - GPU 1: docs/experiments/forward-column-evict-hints.patch (on main) on the column tiles'
#    widths, 2 rounds. Prediction there: −2 to −10 %.
# Outcome (run ZZO, medians, µs): GPU 0, forward: RMSNorm bf16 ×4096 68.0 → 66.3, ×8192 131.6 → 127.9,
# 4096×16384 71.1 → 67.9, **8192×32768 298.4 → 259.0**, **131072×8192 1199 → 1116**; fp16 ×4096 67.9 →
# 65.2, ×8192 +0.6; fp32 ×4096 133.6 → 127.7, ×8192 262.7 → 255.6; the fused add ×4096 134.0 → 128.1,
# ×8192 262.9 → 255.7; LayerNorm ×4096 67.6 → 66.5, ×8192 132.7 → 131.0; rows of 2048 (unchanged
# code) +0.1 to +0.5; backwards (untouched) −3.5 to +1.0. GPU 1, column hints (2 rounds): RMSNorm
# **4096×65536 358.6 → 309.0**, 2048×131072 396.3 → 375.1; the fused add −0.7 / −1.6; LayerNorm
# 4096×65536 +8.2, 2048×131072 −8.1 — landed for RMSNorm's (and the fused add's) column tiles only.
source tools/device_env.sh
mkdir -p /tmp/ab/colhint && cp -r .ab_base/* /tmp/ab/colhint/ && \
  (cd /tmp/ab/colhint && git apply --include='normkit/*' "$OLDPWD/docs/experiments/forward-column-evict-hints.patch") \
  || echo "patch failed"
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench_rounds 3 "$PWD/.ab_base" "$PWD/.ab_new" "_rms|rms|bf16,fp16,fp32|16384x4096,16384x8192" \
      "_wide|rms|bf16|16384x2048,4096x16384,8192x32768,131072x8192" \
      "_fam|fused_add,layer_norm|bf16|16384x2048,16384x4096,16384x8192"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1 L=$L/col; mkdir -p "$L"
  ab_bench_rounds 2 "$PWD/.ab_base" /tmp/ab/colhint "_col|rms,layer_norm,fused_add|bf16|4096x65536,2048x131072"
  python3 tools/ab_summary.py "$L" > "$L/ab_summary.txt"
) > "$L/gpu1.log" 2>&1 &
wait
python3 tools/ab_summary.py "$L" | tee "$L/ab_summary.txt"
echo "== column hints (GPU 1)"; cat "$L/col/ab_summary.txt"
pack_logs
