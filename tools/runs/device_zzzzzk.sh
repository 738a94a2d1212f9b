#!/usr/bin/env bash
# Device run ZZZZZK (session 28, nvidia-h200; carry [".whl"], for `ab` also ".ab_base" — git archive of 5cd9ac9):
#  Run ZZZZZJ `ab` voided the lag-2 experiment: every lag-2 part mismatched the column-tiled reference
#  (tune's ok=False). Cause, found on the CPU (TTIR, sm_90): `old_h = prev_h` before the loop bound both
#  names to one IR value, so Triton's search for loop-carried names (code_generator._find_carries: a name
#  is carried when its value after a dry run of the body differs from the one before) saw old_h unchanged
#  and dropped it — and prev_h, then read only by the dropped name, with it: the parts finished their rows
#  from zeros (hence fewer registers: 94, and the "gains"). Fixed in the patch (zeros of their own; TTIR
#  now carries the four tiles). Compiled again (sm_90, ptxas): held at lag 2 the pipeliner no longer stages
#  the loads (0 cp.async) and the parts spill (LayerNorm bf16 1 × 2048 cap 128: 160 B; 1 × 4096: 255
#  registers, 152 B; fp32 1 × 2048: 211 registers, so two an SM, not three); re-read (RELOAD) at lag 2 they
#  stage as at lag 1 (36 cp.async) at the same registers as lag 1's re-read (128 / 193 / 143, 0 spilled) —
#  block t − 2 read again from L2 (staged ahead: its address does not depend on the exchange).
#  - `sweep` (~4 min, the patched build, same process): lag 1 held (the heuristic), lag 1 re-read, lag 2
#    re-read, lag 2 held. Bytes: the re-read adds an L2 read of h and dy (no DRAM bytes if L2 holds them: two
#    iterations × 528 parts × 8 KB ≈ 8.6 MB at 4096×16384, well inside the 60 MB L2).
#    Prediction: lag 2 held loses (no staging, spills); lag 2 re-read beats lag 1 held by 3-8 % where the
#    wait is exposed (LayerNorm bf16 4096×16384 117 → 108-113, 8192×32768 444 → 415-430; RMSNorm 4096×16384
#    108 → 102-105), ties fp32; lag 1 re-read ties or loses 1-3 % (run ZZZZZF-era: re-read for held tiles
#    lost at 1 × 2048).
#  - `fwdsweep`: as run ZZZZZJ's (tools/runs/device_zzzzzj.sh fwdsweep), not run there.
#  Outcome (`both`, 98 s, µs, every config ok=True against the column-tiled reference): lag 2 LOST everywhere —
#    held (unstaged, spilling): LayerNorm bf16 4096×16384 252.7 against lag 1 held 120.6, 8192×32768 599.1 /
#    446.4, 2048×131072 616.0 / 466.4, RMSNorm 146.6 / 109.2 and 555.9 / 433.2, the fused LayerNorm 326.7 /
#    148.7, the fused add 184.0 / 133.6, fp32 LayerNorm 256.4 / 202.8; re-read at lag 2 ties re-read at lag 1
#    (129.6 / 128.1, 496.6 / 496.7, 522.0 / 526.6, 115.7 / 115.0, 466.1 / 465.7, 151.6 / 148.1, 139.4 / 137.9,
#    224.8 / 222.4) and both lose to lag 1 held (except the fused LayerNorm: 148.1 / 148.7). So the
#    partners' lateness is not what the staged parts wait on: the patch stays an experiment
#    (docs/experiments/split-exchange-lag2.patch, fixed). `fwdsweep`: LayerNorm bf16 forward 4096×65536 in
#    the capped 16 KB split parts 323.0 against the three-read tiles' 352.4 (predicted ≤ 335: met; 1 × 4096
#    parts 380.4) — taken (`ab` below); 8192×32768 split 329.7 against 318.5 (kept three-read; 1 × 16384
#    on 32 three-read 461.9, capped 377.0; whole row re-read 336.2); 4096×16384 whole row re-read on 16
#    warps 71.9 stays (on 32: 79.4; three-read 1 × 8192 83.7, 1 × 4096 83.3, 1 × 16384 144.7).
#  - `ab` (~3 min): LayerNorm's bf16 forward at 65536 in the split parts (config._FWD_SPLIT_LAYER_NORM_2_BYTE),
#    A/B against .ab_base (5cd9ac9), 2 rounds, tools/tune.py --heuristic-only; then the GPU's LayerNorm
#    forward heuristic tests (tests/test_split_rows.py, check mode). Prediction: 4096×65536 352 → 320-328,
#    2048×65536 and 8192×65536 alike (−7 to −10 %), fp16 alike; the control 8192×32768 ±1 %.
#  - `grid` (~6 min): side_by_side 420 — BENCHMARKS' current numbers.
#    Outcome: `ab` (145 s, µs, .ab_base → this tree, rounds 1 / 2): bf16 4096×65536 350.2 / 350.5 → 322.6 /
#    331.1, 2048×65536 180.8 / 180.7 → 166.8 / 167.6, 8192×65536 682.0 / 682.3 → 638.7 / 643.0, fp16 4096×65536
#    338.7 / 336.7 → 315.2 / 316.4 (−6 to −8 %: as predicted); the control 8192×32768 315.7 / 314.9 → 314.5 /
#    317.2; the GPU tests (check mode, -k "layer_norm_forward_heuristic or split_forward") 136 passed. Taken:
#    design change 34. `grid` (321 s, copy 4222 GB/s): 4096×65536 350 → 323 µs; every other normkit row ±2.7 %.
#  - `fwdsweep2` (~4 min): the forward's split parts again where the forwards stay short, since design change
#    32's paired wait (which moved the balance at 65536, above): LayerNorm bf16 2048×131072 (78 %) and fp32
#    4096×65536 (84 %) in parts of 8-32 KB on 4 / 8 / 16 warps, bf16 8192×32768 (81 %) and 4096×16384 (87 %)
#    in wider parts on more warps (1 × 8192 / 1 × 4096 on 4 lost there: 329.7 / 368.2 against 318.5), RMSNorm
#    bf16 2048×131072 (86 %) and fp32 4096×65536 (88 %) likewise. Prediction: most lose or tie (the part
#    sizes were swept in sessions 21-23); a win of ≥ 3 % somewhere is a heuristic change for the next A/B.
#    Outcome (56 s, µs, the heuristic first): all lost or tied — LayerNorm bf16 2048×131072 327.6 (1 × 4096 on 4
#    404.3, 1 × 16384 on 8 capped 349.7, 1 × 8192 on 8 429.4); fp32 4096×65536 610.7 (1 × 2048 723.2, 1 × 4096
#    on 8 799.3, 1 × 8192 on 8 capped 651.4); bf16 8192×32768 317.2 three-read (338.7 / 385.6 / 460.5);
#    4096×16384 72.6 whole row (split 85.1 / 98.6 / 103.4); RMSNorm bf16 2048×131072 291.1 (capped 295.5,
#    1 × 4096 375.5, 1 × 16384 on 8 303.7, 1 × 8192 on 8 355.2); fp32 4096×65536 572.8 against 1 × 4096 on
#    4 capped 563.6 (−1.6 %: under the 3 % bar, a tie), 1 × 2048 647.7, 1 × 8192 on 8 575.8.
#  - `ncu` (~3 min): Nsight Compute on the backward's staged parts at 4096×16384 (LayerNorm 81 %, RMSNorm
#    87 %, the fused add 96 %: the same tile, 1 × 2048 on 4 warps, four an SM) — their DRAM bytes, occupancy
#    and stall reasons side by side, now that the exchange's lag is ruled out; and run ZZZZZJ's prepared
#    forward profile (LayerNorm 4096×16384 held 112 against re-read 72.6 µs; RMSNorm held 71). Prediction:
#    the backward parts read the minimum bytes; LayerNorm's differ from the fused add's by more issue
#    (math pipe / barrier) stalls, not memory; the held forward tile reads the same DRAM bytes as the
#    re-read one and loses in long-scoreboard stalls.
#    Outcome (57 s; logs: ncu_*.log): the backward's staged parts at 4096×16384 read the minimum (268.5 MB;
#    writes 120-123 MB) at 25 % theoretical occupancy (block limit: registers, four of 4 warps an SM) —
#    LayerNorm 114.0 µs, issuing 0.67 warps a scheduler a cycle (67 % of cycles; top stalls not_selected
#    1.08, long_scoreboard 1.00, wait 0.74, barrier 0.73): issue-bound; RMSNorm 104.0 µs, 0.58 (long_scoreboard
#    1.92, barrier 1.24); the fused add 126.5 µs, 0.53 (long_scoreboard 2.88), 86 % of DRAM peak. The forward:
#    the held LayerNorm tile is register-limited to ONE program an SM (theoretical occupancy 25 %, achieved
#    23.4 %, 109.7 µs) where the re-read tile and RMSNorm's held tile fit two (50 %, 45 %: 71.4 / 70.4 µs) —
#    the same 134 MB read. So the held tile's loss is occupancy, not its loads' hint. (tools/ptx_stats.py
#    reports 63 registers for it, under 64: its specialisation differs from the launch's here — not chased.)
#  - `capsweep` (~30 s): the held tile under a 64-register cap, two an SM — plain and fused, bf16 and fp32.
#    Outcome (22 s, µs, the heuristic first): plain bf16 4096×16384 capped 70.7 against re-read 72.6 (held
#    uncapped 111.9; re-read capped 72.6); the fused LayerNorm bf16 133.8 against held uncapped 139.0 (re-read
#    145.9), fp32 273.7 against 274.2 (a tie).
#  - `ab2` (~3 min): the 64-register cap for LayerNorm's 2-byte rows of 16384 held (config
#    _FWD_HELD_LAYER_NORM_CAP), A/B against .ab_base, 2 rounds; then tests/test_ops.py -k layer_norm on the
#    GPU in check mode. Prediction: plain 72.6 → 70-71.5 (−2 to −3 %), 8192×16384 alike; the fused 139 →
#    133-135; fp16 alike; the control 16384×8192 ±1 %.
#    Outcome (99 s, µs, .ab_base → this tree, rounds 1 / 2): plain bf16 4096×16384 73.3 / 72.8 → 71.1 / 71.0,
#    8192×16384 140.0 / 139.7 → 137.4 / 137.1, fp16 73.4 / 73.2 → 71.5 / 71.2; the fused 4096×16384 139.4 /
#    139.4 → 133.5 / 134.6, 8192×16384 273.2 / 273.0 → 262.7 / 264.7; control 131.6 / 131.0 → 131.4 / 130.9;
#    all 24 rows ok=True; tests/test_ops.py -k layer_norm on the GPU: 4 passed. As predicted: taken (design
#    change 34's second half). Then `grid` again (358 s, copy 4166 GB/s, docs/bench_h200_run_zzzzzk2.json →
#    BENCHMARKS "Current numbers"): LayerNorm bf16 4096×16384 forward 72.8 → 71.1, 4096×65536 350 → 326; the
#    fused LayerNorm's grid forward (no statistics stored) 134.6 → 134.3; the smallest shapes +3-4 % (this
#    run's machine: its copy ran 1.6 % slower). Device time used this session: ~1650 of 1800 s.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
N=/tmp/ab/lag2
case $1 in sweep|both) patched_copy $N docs/experiments/split-exchange-lag2.patch ;; esac
variants() {  # TILE: lag 1 held, lag 1 re-read, lag 2 re-read, lag 2 held
  echo "$1 $1:reload $1:reload:l2 $1:l2"
}
case ${1:?sweep|fwdsweep|both|ab|grid|fwdsweep2|ncu|capsweep|ab2} in
ab)
  arm() {
    heuristic_in "$1" 70 --kind fwd --family layer_norm --dtype bf16 --shapes 4096x65536,2048x65536,8192x65536,8192x32768
    heuristic_in "$1" 40 --kind fwd --family layer_norm --dtype fp16 --shapes 4096x65536
  }
  ab_rounds 2 arm "$PWD/.ab_base" "$PWD" | tee "$L/ab.log"
  checked_tests 120 tests/test_split_rows.py -k "layer_norm_forward_heuristic or split_forward" ;;
grid)
  side_by_side 420 ;;
fwdsweep2)
  { tune_sweep fwd layer_norm bf16 2048x131072 60 1x8192:4:split:p4:r128:reload 1x4096:4:split:p4:r128:reload \
        1x16384:8:split:p2:r128:reload 1x8192:8:split:p2:reload
    tune_sweep fwd layer_norm fp32 4096x65536 70 1x4096:4:split:p4:r128:reload 1x2048:4:split:p4:r128:reload \
        1x4096:8:split:p2:reload 1x8192:8:split:p2:r128:reload
    tune_sweep fwd layer_norm bf16 8192x32768 60 1x16384:8:split:p2:r128:reload 1x8192:8:split:p2:reload \
        1x16384:16:split:p1:reload
    tune_sweep fwd layer_norm bf16 4096x16384 40 1x8192:4:split:p4:r128:reload 1x4096:4:split:p4:r128:reload \
        1x8192:8:split:p2:reload
    tune_sweep fwd rms bf16 2048x131072 60 1x8192:4:split:p4:r128:reload 1x4096:4:split:p4:reload \
        1x16384:8:split:p2:reload 1x8192:8:split:p2:reload
    tune_sweep fwd rms fp32 4096x65536 60 1x4096:4:split:p4:r128:reload 1x2048:4:split:p4:reload \
        1x8192:8:split:p2:r128:reload
  } 2>&1 | tee "$L/fwdsweep2.log" ;;
ncu)
  ncu_stalls bwd ln_bwd_16384 --family layer_norm --shape 4096x16384
  ncu_stalls bwd rms_bwd_16384 --family rms --shape 4096x16384
  ncu_stalls bwd fused_add_bwd_16384 --family fused_add --shape 4096x16384
  ncu_stalls fwd ln_held --family layer_norm --shape 4096x16384 --config 1x16384:16
  ncu_stalls fwd ln_reload --family layer_norm --shape 4096x16384 --config 1x16384:16:reload
  ncu_stalls fwd rms_held --family rms --shape 4096x16384 --config 1x16384:16 ;;
capsweep)
  { tune_sweep fwd layer_norm bf16 4096x16384 40 1x16384:16 1x16384:16:r64 1x16384:16:reload:r64 1x16384:16:reload
    TUNE_ARGS=--residual tune_sweep fwd layer_norm bf16 4096x16384 40 1x16384:16 1x16384:16:r64 1x16384:16:reload
    TUNE_ARGS=--residual tune_sweep fwd layer_norm fp32 4096x16384 40 1x16384:16 1x16384:16:r64 1x16384:16:reload
  } 2>&1 | tee "$L/capsweep.log" ;;
ab2)
  arm() {
    heuristic_in "$1" 50 --kind fwd --family layer_norm --dtype bf16 --shapes 4096x16384,8192x16384,16384x8192
    heuristic_in "$1" 50 --kind fwd --family layer_norm --residual --dtype bf16 --shapes 4096x16384,8192x16384
    heuristic_in "$1" 30 --kind fwd --family layer_norm --dtype fp16 --shapes 4096x16384
  }
  ab_rounds 2 arm "$PWD/.ab_base" "$PWD" | tee "$L/ab2.log"
  checked_tests 100 tests/test_ops.py -k "layer_norm" ;;
sweep|both)
  ( cd $N && export PYTHONPATH=/tmp/site:$N
    tune_sweep bwd layer_norm bf16 4096x16384 50 $(variants 1x2048:4:split:a3:p4:r128)
    tune_sweep bwd layer_norm bf16 8192x32768,2048x131072 80 $(variants 1x4096:4:split:a3:p2)
    tune_sweep bwd rms bf16 4096x16384 40 $(variants 1x2048:4:split:a3:p4:r128)
    tune_sweep bwd rms bf16 2048x131072 50 $(variants 1x4096:4:split:a3:p2)
    TUNE_ARGS=--residual tune_sweep bwd layer_norm bf16 4096x16384 50 $(variants 1x2048:4:split:a3:p4:r128)
    tune_sweep bwd fused_add bf16 4096x16384 40 $(variants 1x2048:4:split:a3:p4:r128)
    tune_sweep bwd layer_norm fp32 4096x16384 50 $(variants 1x2048:4:split:a4:p3)
  ) 2>&1 | tee "$L/sweep.log" ;;&
fwdsweep|both)
  layer_norm_fwd_sweep 2>&1 | tee "$L/fwdsweep.log" ;;
esac
pack_logs
