#!/usr/bin/env bash
# Device run ZZI (session 12, nvidia-h200, the session's last ~3 device minutes): the forward's rows
# through the TMA (tools/tma_fwd_probe.py), LayerNorm bf16 16384×4096 and ×2048 — the forward's last
# issue-4 gap (93-94 % of copy).
# Count (ptxas, sm_90, CPU): 1 × 4096 LayerNorm on 8 warps — 2 cp.async.bulk.tensor (load, store),
# 8 KB shared a program, 16 bar.sync against the pointer kernel's 5; persistent 3 stages 24 KB.
# Prediction: no gain (the shared-memory round trip and barriers replace the vector loads; ZZC's
# persistent cp.async forward was slower): within ±2 µs of normkit's 67-68 µs at ×4096; a win
# ≥ 1 µs at both shapes would make it a kernel flag to A/B next session.
# Outcome (copy 4221 GB/s): no gain, as predicted — best TMA LayerNorm ×4096 69.7 µs (2 rows a box,
# 4 warps, one program a row block) against normkit's 68.7; ×2048 35.4 against 35.0. Persistent and
# pipelined (2-3 stages, 132-528 programs): 73.7-213 µs, slower everywhere. 1 row a box 94-97 µs.
source tools/device_env.sh
timeout 140 python3 tools/tma_fwd_probe.py --shapes 16384x4096,16384x2048 --family layer_norm > $L/tma.log 2>&1
echo "tma rc=$?"; grep -E "copy|normkit|best|Error" $L/tma.log | head -20
pack_logs
