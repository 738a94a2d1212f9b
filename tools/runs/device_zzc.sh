#!/usr/bin/env bash
# Device run ZZC (session 11, nvidia-h200-x2): probe for the forward — a persistent, staged-load
# version of its whole-row unmasked path (tools/persistent_fwd_probe.py) against normkit's
# forward in the same process. Count: 16384×4096 bf16 moves 268 MB (63.4 µs at 4230 GB/s); the
# forward now runs 68-69 (93-94 %) on one program per row block. Prediction: if the gap is the
# launch ramp and the loads' latency per block, persistent programs with 3 stages reach ≥ 95 %
# (≤ 66.7 µs) at ×4096 and ≥ 93 % at ×2048; if not, the forward's gap is elsewhere.
# GPU 0: LayerNorm 16384×2048 / ×4096; GPU 1: RMSNorm the same.
# Outcome: rejected — the persistent forward is slower on every tile, stage count and grid tried.
# LayerNorm: ×2048 best 36.3 µs against normkit's 34.8, ×4096 70.4 against 67.8 (copy 4229);
# RMSNorm: ×2048 35.5 against 35.0, ×4096 69.8 against 67.6 (copy 4126). Stages 1-4 within ±1 µs
# of each other: the forward's remaining gap is neither its launch ramp nor its loads' latency.
source tools/device_env.sh
for gpu in 0 1; do
  (
    export CUDA_VISIBLE_DEVICES=$gpu
    family=layer_norm; [ $gpu = 1 ] && family=rms
    timeout 125 python3 tools/persistent_fwd_probe.py --family $family --shapes 16384x2048,16384x4096 \
        > $L/probe_$family.log 2>&1
    echo "probe $family rc=$?"; grep -E "normkit forward|best|copy" $L/probe_$family.log
  ) &
done
wait
pack_logs
