#!/usr/bin/env bash
# Device run ZZZZB (prepared in session 18 for the next session, nvidia-h200-x2, ~8 min; carry [".whl"]):
#  - GPU 1: the side-by-side grid, the first with graph_time's 0.1 s warm-up (session 18, run ZZZZA:
#    RMSNorm bf16 131072×8192 1547 µs against the grid's 1644 in run ZZZZ, which sat in a start-up
#    transient). Its tables replace BENCHMARKS' current numbers (`python tools/bench_tables.py
#    docs/bench_h200_run_zzzzb.json --write`, then the prose).
#  - GPU 0: rows of 16384 after design change 17 — the fused add bf16 4096×16384 lost 3 % with it
#    (163.6 → 169.4 µs; 1 × 4096 parts 165.1 in run ZZZZ's sweep): 1 × 4096 on 4 warps, two an SM,
#    against the heuristic's 2 × 2048, for every family at 4096×16384 and 8192×16384.
# Count: the grid's wall time grows by ~0.1 s a timed (impl, pass) — ~300 of them: +30-60 s.
#    Then RMSNorm's / the fused add's wide rows on twice the warps an SM (8-warp parts capped at 128
#    registers, or 1 × 2048 on 4 warps, four an SM; both spill nothing since design change 17).
# Prediction: 131072×8192 backward 1530-1560 µs, forward ~1000; every other shape within ±2 % of run
# ZZZZ or faster (the warm-up can only remove a transient); 1 × 4096 −1 to −2 % on the fused add at
# 16384, ±1 % on RMSNorm / LayerNorm; 16 warps an SM −3 to −8 % at 32768-131072 if the parts wait on
# latency (long scoreboard 1.24 an issue, run ZZZU) more than on issue (31 SASS instructions an
# element on 8 warps against 23-25).
# Outcome: not run (session 19 had only single H200s lent; the side-by-side grid ran as
# tools/runs/device_zzzzd.sh after design change 18; the sweeps wait for a later session).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=1
  side_by_side 480
) > "$L/gpu1.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/site:$PWD
  for fam in fused_add rms layer_norm; do
    tune_sweep bwd $fam bf16 4096x16384,8192x16384 90 2x2048:4:split:pf:p2 1x4096:4:split:pf:p2
  done
  # twice the warps an SM: since design change 17 RMSNorm's / the fused add's 1 × 4096 parts on 8
  # warps capped at 128 registers spill nothing (ptx_stats, sm_90: 0 B; they spilled and lost in run
  # ZZZG), nor 1 × 2048 on 4 warps capped, four an SM — 16 warps an SM against the heuristic's 8
  for fam in rms fused_add; do
    tune_sweep bwd $fam bf16 8192x32768,4096x65536,2048x131072 120 1x4096:8:split:pf:p2:r128 \
        1x2048:4:split:pf:p4:r128
  done
) > "$L/gpu0.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
