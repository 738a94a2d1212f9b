#!/usr/bin/env bash
# Device run ZZY (session 14, nvidia-h200, ~2 min): torch.compile's LayerNorm forward at 8192×32768
# (run ZZX, tools/inductor_code.py: 280.0 µs = 91 % against normkit's whole row 341.7) is a
# three-pass looped reduction — Σx per lane, then Σ(x − mean)² per lane, then y — over 1 × 16384
# blocks on 32 warps (num_stages 1), passes 1-2 evict_last, pass 3 evict_first: one accumulator
# live a pass, no block reduction inside a loop. .ab_new = main with LayerNorm's column tiles so
# (two statistics passes of per-lane sums, the L2 hints RMSNorm's column tiles have). ptxas (sm_90):
# 1 × 16384 on 32 warps 46 registers (1 program an SM; main's 32, 2 an SM), 1 × 8192 on 16 warps 40
# (3 an SM). Swept with a 32-register cap (:r32) too.
# Prediction: 8192×32768 column tiles ≤ 300 µs (from the whole row's 342), 4096×65536 ±5 % (three
# reads of 128 KB rows press L2: torch.compile there 522).
# Outcome (run ZZY and a repeat on the same machine): 8192×32768 1 × 8192 on 16 warps 321.6 / 327.8
# against the whole row 345.0 / 346.7 (−7 %; predicted ≤ 300: missed); 4096×65536 1 × 16384 on 32
# warps at 32 registers 357.5 / 357.6 against 386.5-388.8 staged (−7 %); 2048×131072 554.3 at best
# (against ~400 on main: three reads of 256 KB rows leave L2); RMSNorm's column tiles as per-lane sums
# 318.2 / 391.2 against 309-311 / 376. Device time ran out before an A/B and the GPU tests: prepared
# as docs/experiments/forward-layer-norm-centered-pass.patch with tools/runs/device_zzz.sh.
source tools/device_env.sh
cd .ab_new && export PYTHONPATH=/tmp/site:$PWD
timeout 150 python3 tools/tune.py --kind fwd --family layer_norm --shapes 8192x32768,4096x65536 --each \
    --config 1x16384:32:col --config 1x16384:32:col:r32 --config 1x8192:16:col --config 1x8192:16:col:s3 \
    --config 1x8192:16:col:r32 2>&1 | grep -E "each|Error" \
  | sed -E 's/TileConfig\(block_m=([0-9]+), block_n=([0-9]+), one_tile=(\w+), num_warps=([0-9]+).*max_registers=([0-9]+), column_stages=([0-9]).*/\1x\2 w\4 one=\3 r\5 cs=\6/'
