#!/usr/bin/env bash
# Device run ZZZD (session 15, nvidia-h200-x2, ~2 min): LayerNorm's three-read column tiles (landed
# in run ZZZA: 8192×32768 313 µs, torch.compile 278) by bytes in flight an SM. torch.compile's kernel
# there (run ZZX): 1 × 16384 on 32 warps at 32 registers = 2 programs an SM, 64 KB of x in flight a
# pass; normkit's heuristic tile 1 × 8192 on 16 warps at 40 registers = 3 an SM, 48 KB (ptxas, sm_90;
# 1 × 4096 on 8 warps: 40, 6 an SM, 48 KB). Capped at 32 registers (:r32) the tiles reach 64 KB (the
# SM's 2048 threads then bound it: 1 × 8192 / 16 warps ×4, 1 × 4096 / 8 warps ×8, 1 × 16384 / 32 ×2).
#  - GPU 0: 8192×32768; GPU 1: 4096×65536 (heuristic 1 × 16384 on 32 warps at r32, 351 µs).
# Count: 8192×32768 bf16 moves 2 × 512 MiB → 255 µs at 4206 GB/s (torch.compile 278 = 92 %).
# Prediction: a 64 KB-in-flight tile ≤ 300 µs at 8192×32768 (from 313), if bytes in flight are what differs.
# Outcome: refuted — the heuristic stays the best. 8192×32768: 1 × 8192 / 16 warps 316.6 (1 × 4096 /
# 16 warps at r32 316.4; at r32 1 × 8192 344.4, 1 × 16384 / 32 warps 378.6, 1 × 4096 / 8 warps 516.5,
# 2 × 4096 525.8; uncapped 1 × 8192 / 8 warps 396.5, 1 × 16384 / 16 warps 418.0). 4096×65536: the
# heuristic's 1 × 16384 / 32 warps at r32 352.1-352.2; the others 399.6-574.9. Capping registers for
# more programs an SM does not buy torch.compile's 278 µs.
source tools/device_env.sh
sweep() {
  timeout 120 python3 tools/tune.py --kind fwd --family layer_norm --shapes "$1" --each \
      --config 1x8192:16:col:two --config 1x8192:16:col:two:r32 --config 1x16384:32:col:two:r32 \
      --config 1x4096:8:col:two:r32 --config 1x8192:8:col:two --config 1x4096:16:col:two:r32 \
      --config 2x4096:16:col:two:r32 --config 1x16384:16:col:two 2>&1 | grep -E "each|Error" \
    | sed -E 's/TileConfig\(block_m=([0-9]+), block_n=([0-9]+), one_tile=(\w+), num_warps=([0-9]+).*max_registers=([0-9]+), column_stages=([0-9]), centered_pass=(\w+).*/\1x\2 w\4 r\5 cs=\6 two=\7/'
}
( export CUDA_VISIBLE_DEVICES=0; sweep 8192x32768 ) > "$L/gpu0.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=1; sweep 4096x65536 ) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
