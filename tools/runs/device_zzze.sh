#!/usr/bin/env bash
# Device run ZZZE (session 15, nvidia-h200-x2, ~2 min): the backward's split parts with more than
# one program an SM — never swept (tools/tune.py's split candidates are all programs_per_sm=1; the
# forward's split went 794.5 → 607.3 µs from 2 to 4 programs an SM, run ZZR). The launcher fits the
# grid to the programs the compiled kernel leaves resident (ops.launch_bwd → backward_grid), so
# asking for pK never deadlocks: it runs what fits. ptxas (sm_90, on the CPU, bf16 N = 32768): the
# heuristic's 1 × 8192 part on 8 warps 255 registers (1 an SM, 8 warps); 1 × 4096 on 4 warps 255
# (2 an SM), 1 × 2048 on 8 warps 102-114 (2), 2 × 2048 on 4 warps 254 (2), 1 × 2048 on 4 warps
# 157-168 (3), 1 × 1024 on 4 warps 92-96 (5).
# Count: 8192×32768 bf16 backward moves x, dy in and dx out: 3 × 512 MiB = 1.61 GB → 383 µs at 4206
# GB/s (RMSNorm 550 = 70 %, the fused add 689 = 74 % of its 4 × 512 MiB, LayerNorm 632 = 61 %).
# Prediction: 2 programs an SM at 16-32 KB a part cut 5-15 % (more warps to wait on the exchange).
# Outcome: met for RMSNorm and LayerNorm, not for the fused add. RMSNorm 1 × 4096 on 4 warps, 2 an SM:
# 8192×32768 552.7 → 506.8, 4096×65536 591.9 → 530.4 (2 × 2048 on 4: 529.0 / 548.0; 4096×16384 127.0
# against 140.4); LayerNorm 2 × 2048 on 4 warps, 2 an SM: 638.1 → 587.2, 688.9 → 604.3 (1 × 4096 on 4:
# 707.3 / 743.9); the fused add 720.3 → 706.9 (2 × 2048) / 713.0 (1 × 4096). 3 and 5 an SM on smaller
# parts and 1 × 2048 on 8 warps slower (578-1226).
source tools/device_env.sh
sweep() {  # family shapes
  timeout 140 python3 tools/tune.py --kind bwd --family "$1" --shapes "$2" --each \
      --config 1x4096:4:split:pf:p2 --config 1x2048:8:split:pf:p2 --config 2x2048:4:split:pf:p2 \
      --config 1x2048:4:split:pf:p3 --config 1x1024:4:split:pf:p5 --config 2x2048:8:split:pf 2>&1 \
    | grep -E "each|Error|heuristic" \
    | sed -E 's/TileConfig\(block_m=([0-9]+), block_n=([0-9]+), one_tile=(\w+), num_warps=([0-9]+), programs_per_sm=([0-9]+).*split=(\w+), prefetch=(\w+).*/\1x\2 w\4 p\5 split=\6 pf=\7/' \
    | sed "s/^/$1 /"
}
( export CUDA_VISIBLE_DEVICES=0; sweep rms 8192x32768,4096x65536; sweep fused_add 8192x32768 ) > "$L/gpu0.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=1; sweep layer_norm 8192x32768,4096x65536; sweep rms 4096x16384 ) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
