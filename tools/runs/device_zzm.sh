#!/usr/bin/env bash
# Device run ZZM (session 13, nvidia-h200): the forward's whole-row tile re-reading the row for y
# (TileConfig.reload → RELOAD: the statistics pass loads with evict_last, the output pass reads
# the row again with evict_first, so the row need not stay live across the reduction) and ptxas'
# register cap (TileConfig.max_registers → maxnreg). Counted (tools/ptx_stats.py, sm_90, RMSNorm
# bf16): 1 × 32768 on 32 warps 52 → 38 registers, 32 with the cap and no spill (1 → 2 programs an
# SM; torch.compile's kernel for 8192×32768, run ZZK: the same tile at 32 registers, 257.5 µs
# against normkit's 293.1); 1 × 8192 / 16 warps 34 → 32 (3 → 4 an SM); 1 × 16384 / 16 warps 62 →
# 50, 32 with the cap and 16 B spilled (2 → 4); 1 × 4096 / 8 warps 35 → 32 (6 → 8).
# Prediction: RMSNorm 8192×32768 293 → ≤ 265 µs with the cap; 16384×8192 / 131072×8192 −1 to −3 %;
# ×4096 ±1 %.
# Outcome (run ZZM, one sweep, µs): RMSNorm 8192×32768 295.0 → 302.1 re-read alone, **259.1 with the
# cap**; 4096×16384 71.0 → 67.7 (cap); 16384×8192 130.7 → 128.0; 131072×8192 1160 → 1121 (1118 capped);
# ×4096 67.6 → 65.6 (8 warps); fp32 ×4096 133.0 → 127.6 (16 warps); the fused add ×4096 133.6 →
# 128.0 (16 warps), ×8192 262.5 → 254.7; LayerNorm ×4096 67.7 → 66.5, ×8192 131.5 → 130.6; LayerNorm
# fp32 2 × 4096 131.4 → 133.0 (not taken). (Rows of 8192 with 1 × 4096 tiles: invalid, flagged.)
source tools/device_env.sh
t() { python3 tools/tune.py --kind fwd --each "$@" 2>&1 | grep -E "each|heuristic|MISMATCH|Error"; }
t --family rms --shapes 8192x32768 --config 1x32768:32:reload --config 1x32768:32:reload:r32 --config 1x32768:32:col
t --family rms --shapes 4096x16384 --config 1x16384:16:reload --config 1x16384:16:reload:r32 --config 1x16384:32:reload --config 1x16384:32:reload:r32
t --family rms --shapes 16384x8192,131072x8192 --config 1x8192:16:reload --config 1x8192:8:reload --config 1x8192:16:reload:r32
t --family rms --shapes 16384x4096 --config 1x4096:8:reload --config 1x4096:4:reload --config 1x4096:16:reload
t --family rms --dtype fp32 --shapes 16384x4096 --config 1x4096:16:reload --config 1x4096:8:reload --config 1x4096:16:col
t --family fused_add --shapes 16384x4096,16384x8192 --config 1x4096:8:reload --config 1x4096:16:reload --config 1x8192:16:reload
t --family layer_norm --shapes 16384x4096,16384x8192 --config 1x4096:8:reload --config 1x8192:8:reload --config 1x8192:16:reload
t --family layer_norm --dtype fp32 --shapes 16384x4096 --config 2x4096:16:reload --config 1x4096:16:reload
