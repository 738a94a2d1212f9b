#!/usr/bin/env bash
# Device run ZZZZA (session 18, nvidia-h200, ~1.5 min): graph_time with 0.1 s of untimed replays before
# the timed ones (normkit/bench/timing.py _WARMUP_S), after ZZZS3 found the benchmark-input processes'
# first ~70 ms of replays 9-11 % slow. Three bench-input processes and one N(0, 1) process of
# tools/offset_probe.py, then the benchmark itself at RMSNorm bf16 131072×8192 (normkit, compile).
# Prediction: 1530-1540 µs in all four probe processes; the benchmark's normkit 1530-1550.
# Outcome (session 18, nvidia-h200, copy 4193 GB/s): the probe 1541.5 / 1545.9 / 1540.1 µs with the
# benchmark's inputs, 1545.8 with N(0, 1); the benchmark normkit backward 1547 µs (99 % of copy; ZZZZ
# 1644, ZZZO 1717), forward 996 (ZZZZ 1110: the forward had sat in the transient too), torch.compile
# 1684 / 991. Landed with session 18; the next side-by-side grid is the first with it.
source tools/device_env.sh
for i in 1 2 3; do timeout 60 python3 tools/offset_probe.py --separate --api --bench-inputs --repeats 1 | sed "s/^/bench $i /"; done
timeout 60 python3 tools/offset_probe.py --separate --api --repeats 1 | sed "s/^/randn /"
timeout 120 python3 -m normkit bench --family rms --impls normkit,compile --dtypes bf16 --shapes 131072x8192 2>&1 | grep -E "131072|copy bandwidth" | head
pack_logs
