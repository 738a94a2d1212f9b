#!/usr/bin/env bash
# Device run ZY (session 11, nvidia-h200-x2): async_stages over the rest of the backward's
# whole-row shapes, before choosing tiles. Run ZX (tools/runs/device_zx.sh) swept 4 bf16 shapes: 3
# stages won all four — LayerNorm 16384×2048 55.0 → 52.7 µs (2 × 2048, 4 warps), ×4096 105.6 →
# 102.1 (2 × 4096, 8 warps), RMSNorm ×1024 29.6 → 28.0 (4 × 1024, 4 warps), ×2048 53.2 → 51.4;
# 2 stages never. Prediction: the same gain (2-4 %) wherever the prefetching tile is latency-bound
# (fused add, ×8192, 4096×2048, fp32); none at 524288×128 (64-row tiles already hide latency).
# GPU 0: fused add ×1024/×2048/×4096/×8192 bf16, LayerNorm ×1024, 4096×2048 RMSNorm, 524288×128.
# GPU 1: RMSNorm ×4096/×8192, LayerNorm ×8192, fp32 RMSNorm / LayerNorm / fused add ×4096.
# Outcome (µs, the uniform pick 4×1024 w4 / 2×2048 w4 / 2×4096 w8 / 1×8192 w8 on 3 stages against
# the prefetching heuristic): RMSNorm ×4096 99.9 / 103.3, ×8192 196.3 / 200.8, 4096×2048 16.2 /
# 17.1; LayerNorm ×1024 29.0 / 30.8, ×8192 199.2 / 206.0; fused add ×1024 36.3 / 37.0, ×2048
# 68.1 / 68.7, ×4096 130.0 / 130.7, ×8192 256.9 / 257.2; four stages lost ×8192 by 15-20. fp32
# ×4096: staged 201-207 against 198-201 (not for 4-byte rows) — but plain 1 × 4096 on 8 warps
# without prefetch ran RMSNorm 191.7 and LayerNorm 194.8 (next to A/B). 524288×128: cut by
# the time limit (no staged tile reached; 32 × 128 w2 remained best, 114.0).
source tools/device_env.sh
sweep() {  # FAMILY SHAPE DTYPE [MAX_TILE]
  timeout 150 python3 tools/tune.py --kind bwd --family $1 --shapes $2 --dtype $3 --split no --prefetch also \
      --async-stages 3,4 --ppsm 1,2,3,4 --max-tile ${4:-8192} --each --json $L/tune_$1_$2_$3.json \
      > $L/tune_$1_$2_$3.log 2>&1
  echo "tune $1 $2 $3 rc=$?"; grep -A2 "heuristic" $L/tune_$1_$2_$3.log | cut -c1-200
}
(
  export CUDA_VISIBLE_DEVICES=0
  for n in 1024 2048 4096; do sweep fused_add 16384x$n bf16; done
  sweep fused_add 16384x8192 bf16 16384
  sweep layer_norm 16384x1024 bf16
  sweep rms 4096x2048 bf16
  sweep rms 524288x128 bf16
) &
(
  export CUDA_VISIBLE_DEVICES=1
  sweep rms 16384x4096 bf16
  sweep rms 16384x8192 bf16 16384
  sweep layer_norm 16384x8192 bf16 16384
  for f in rms layer_norm fused_add; do sweep $f 16384x4096 fp32 16384; done
) &
wait
pack_logs
