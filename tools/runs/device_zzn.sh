#!/usr/bin/env bash
# Device run ZZN (session 13, nvidia-h200): run ZZM's reload tiles on the remaining widths and
# families (rows of 128, 256, 1024, 2048; the fused add and LayerNorm at 16384 and 32768, where
# ptxas gives them 63-64 registers re-reading: caps 32 and 40 tried), to fit the heuristic.
# Prediction: ±1 µs below 4096 (the short tiles hold few values a thread: registers are not what
# bounds them); at 16384 / 32768 the caps' spills decide.
# Outcome (run ZZN, one sweep, µs): below 4096 nothing to take — rows of 2048 ±0.3 (LayerNorm +1.1,
# the fused add on 8 warps −0.9), 1024 −0.6 / ±0, QK rows −0.6 / −1.4 (RMSNorm only swept); the fused
# add 4096×16384 133.3 → 130.5 (no cap: 32 → 379, 40 → 210), LayerNorm 4096×16384 112.7 → 73.2 (no
# cap), ×32768 ±1.5 (not taken), the fused add ×32768 −3.0, ×8192 263.3 → 254.7; fp16 ×4096 67.7 → 65.7.
source tools/device_env.sh
t() { python3 tools/tune.py --kind fwd --each "$@" 2>&1 | grep -E "each|heuristic|MISMATCH|Error"; }
t --family rms --shapes 16384x2048,32768x2048 --config 1x2048:4:reload --config 1x2048:8:reload --config 2x2048:8:reload
t --family fused_add --shapes 16384x2048 --config 1x2048:4:reload --config 1x2048:8:reload
t --family layer_norm --shapes 16384x2048 --config 1x2048:4:reload --config 1x2048:8:reload
t --family rms --shapes 16384x1024 --config 4x1024:8:reload --config 2x1024:4:reload --config 4x1024:4:reload
t --family layer_norm --shapes 16384x1024 --config 2x1024:4:reload --config 4x1024:8:reload
t --family rms --shapes 524288x128 --config 32x128:8:reload --config 32x128:4:reload
t --family rms --shapes 262144x256 --config 16x256:8:reload --config 16x256:4:reload
t --family fused_add --shapes 4096x16384 --config 1x16384:16:reload --config 1x16384:16:reload:r32 --config 1x16384:16:reload:r40 --config 1x16384:32:reload:r32
t --family layer_norm --shapes 4096x16384 --config 1x16384:16:reload --config 1x16384:16:reload:r32 --config 1x16384:16:reload:r40 --config 1x16384:32:reload:r32
t --family fused_add --shapes 8192x32768 --config 1x32768:32:reload --config 1x32768:32:reload:r32
t --family layer_norm --shapes 8192x32768 --config 1x32768:32:reload --config 1x32768:32:reload:r32
t --family fused_add --shapes 16384x8192 --config 1x8192:16:reload:r32 --config 1x8192:16:reload
t --family rms --dtype fp16 --shapes 16384x4096 --config 1x4096:8:reload
