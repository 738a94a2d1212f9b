#!/usr/bin/env bash
# Device run ZZJ (session 12, nvidia-h200, ~1 device minute): run ZZI's TMA forward gained from 1 to
# 2 rows a box (LayerNorm 16384×4096 94.0 → 69.7 µs on 4 warps); this asks whether 4 and 8 rows
# a box (32-64 KB of shared memory a program, one program a row block) go further.
# Prediction: 4 rows ≈ 2 rows ± 1 µs (fewer programs fit an SM as the boxes grow); a result below
# normkit's 68-69 µs at both shapes would make the TMA forward a kernel flag to A/B next session.
# Outcome (copy 4250 GB/s): 2 rows a box stays the best — ×4096 69.2 µs against normkit's 68.7 (4 rows
# 77.5, 8 rows 99.3-131); ×2048 35.2 against 34.8 (4 rows 36.4). The TMA forward is rejected.
source tools/device_env.sh
timeout 60 python3 tools/tma_fwd_probe.py --shapes 16384x4096,16384x2048 --family layer_norm --block-m 2,4,8 \
    --grid-only > $L/tma.log 2>&1
echo "tma rc=$?"; grep -E "copy|normkit|each|Error" $L/tma.log | head -20
pack_logs
