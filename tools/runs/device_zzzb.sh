#!/usr/bin/env bash
# Device run ZZZB (session 15, nvidia-h200-x2, ~3 min): sweeps for the 4-byte rows run ZZZA's
# side-by-side measured for the first time with peers in the same run.
#  - GPU 0: backward fp32 4096×16384, each family — Liger's fused add ran 286 µs (89 %) against
#    normkit's 311 (82 %): normkit's 1 × 4096 split parts on 16 warps (run ZZT's choice, swept only
#    at 32768 / 65536) against whole rows (Liger's way: 1 × 16384 on 32 warps, a persistent program
#    an SM) and other parts.
#  - GPU 1: forward fp32 4096×65536 RMSNorm (771 µs = 66 %): the 16384-column tile (64 KB of fp32
#    a tile, sized for bf16) against tiles of 16 / 32 KB.
# Count: fused add backward fp32 4096×16384 moves x, dy, dresidual_out in and dx out: 4 × 256 MiB =
# 1.07 GB → 255 µs at 4206 GB/s; RMSNorm forward fp32 4096×65536: 2 × 1 GiB → 511 µs.
# Prediction: whole rows on 32 warps ≤ 290 µs for the fused add (Liger's 286); 8192-column
# (32 KB) forward tiles ~600 µs (the bf16 tile's 83 %).
# Outcome: refuted both. The fused add: the heuristic's 1 × 4096 split parts 313.6 µs stay the best
# (whole rows 365.8 on 32 warps, 1326-1896 with prefetch; a repeat: 345.5 on 16 warps, 360.3 on 8);
# RMSNorm 255.0 (best 248.9), LayerNorm 261.0 (258.7). Forward RMSNorm 723.3 against 721.4 for 8192
# columns on 32 warps (16 warps 772.8); LayerNorm's staged tile 786.2, the best of five.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  for family in fused_add rms layer_norm; do
    timeout 150 python3 tools/tune.py --kind bwd --family $family --dtype fp32 --shapes 4096x16384 --each \
        --config 1x4096:16:split:pf --config 1x4096:8:split:pf --config 2x2048:8:split:pf \
        --config 1x8192:16:split:pf --config 1x8192:32:split:pf --config 1x16384:32 --config 1x16384:32:pf \
        --config 1x16384:16:pf 2>&1 | grep -E "each|Error|heuristic"
  done
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 150 python3 tools/tune.py --kind fwd --family rms --dtype fp32 --shapes 4096x65536 --each \
      --config 1x16384:32:col --config 1x8192:32:col --config 1x8192:16:col --config 1x4096:16:col \
      --config 1x4096:8:col --config 2x4096:16:col --config 1x8192:16:col:s3 2>&1 | grep -E "each|Error|heuristic"
  timeout 100 python3 tools/tune.py --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536 --each \
      --config 1x4096:16:col:s3 --config 1x2048:8:col:s3 --config 1x4096:8:col:s3 --config 1x8192:32:col:s3 \
      --config 1x4096:16:col:s4 2>&1 | grep -E "each|Error|heuristic"
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
