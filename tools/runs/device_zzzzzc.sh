#!/usr/bin/env bash
# Device run ZZZZZC (session 24, nvidia-h200; `both` on nvidia-h200-x2; carry [".whl"]), in calls:
#  - `sweep`, `sweep2`, `sweep3` (~1-1.5 min each; tools/tune.py --config, µs, the heuristic first in the
#    same process): the split parts' exchange waits by spinning in PTX (kernels/stats.py _await_word: each
#    lane on its own words, no loop in the kernel's IR, no block-wide count of late words), which lets
#    Triton's pipeliner take the split row loop — its loads staged 2-4 deep in shared memory (cp.async;
#    TileConfig.async_stages on a split config, tune.py's flag :aK) instead of the register prefetch (one
#    row block ahead).
#    Count (ptxas, sm_90, tools/ptx_stats.py --tile ... --flags SPIN_WAIT=1): RMSNorm bf16 1 × 2048 on 4
#    warps staged 2-3 deep 120-128 registers, 0 B spilled (prefetching: 128 capped, 20 B) — four an SM
#    with two row blocks in flight each, against one; LayerNorm 1 × 2048 on 4 staged 2 deep 128 registers,
#    0 B (prefetching: 168, three an SM), 2 × 2048 229 (255); 1 × 4096 RMSNorm 212 (255, 20 B spilled).
#    The forward's split parts (which re-read the row from L2 for y) stage both reads: RMSNorm 1 × 8192
#    on 4 warps 2 deep 72 registers, 48 KB shared.
#    Prediction: bytes in flight an SM double (two stages against one prefetched block) at the same or
#    more programs an SM: the backward's split parts −3 to −8 % (RMSNorm 82-88 % → ≥ 88 %), the
#    forward's ±3 % (its parts already four an SM, the row read at once).
#    Outcome: 3 stages win, 2 lose to the prefetch (RMSNorm 8192×32768 538.4 two deep, 430.3 three);
#    bf16 backward (best staged against run ZZZZS's grid): RMSNorm 4096×16384 108.3 / 115.0, 8192×32768
#    410-413 / 440.3, 4096×65536 414.6 / 431.7, 2048×131072 430.6 (1 × 4096 on 4) / 438.9; the fused add
#    132.2 / 161.0, 508.3 / 631.1, 508.9 / 602.2, 511.9 / 609.9, 1024×262144 514.5 (95-99 % of copy);
#    LayerNorm 126.6 / 134.3, 2048×131072 522.5 / 562.2, 1024×262144 567.2 against 685.8, but 4096×65536
#    518.7-607 / 510.0; fp32 RMSNorm 200.9 / 219.8, 803.8 / 850.4, the fused add 253.4 / 290.2, 993.8 /
#    1130.6, LayerNorm fp32 934.6 / 896.8 (lost); the recomputing backward lost staged everywhere
#    (RMSNorm 4096×16384 146.4 against 132.7; LayerNorm 873.3 against 818.8 at 2048×131072). Forward:
#    the fused add's 1 × 2048 parts three deep −3 to −5 % (579.5 / 604.9, 576.3 / 607.5, 580.7 / 600.4);
#    RMSNorm's and LayerNorm's split forwards lost staged (309-353 against 305; 398-480 against 354).
#    The heuristic lines (the prefetching parts, here spinning too) were 5-18 % slower than in run
#    ZZZZS: spinning costs the prefetching parts (`ab` below) — they keep the poll.
#  - `sleep` (~1.5 min): a back-off in the spin (nanosleep 0, 20, 64, 200, 600 ns): the staged parts
#    within ±1 % for 0-200 ns (RMSNorm 8192×32768 1 × 2048 410.1-413.5), 600 ns +0.5 to +6 %; the
#    spinning prefetching parts 458-608 whatever the back-off (tight-loop L2 traffic is not what slows
#    them). Kept 64.
#  - `both` (nvidia-h200-x2, ~7 min): GPU 0 the check-mode split tests (staged configs added) 202 passed,
#    memcheck of the forward's split configurations 48 runs 0 errors, the backward's stopped at its 150 s
#    (69 runs ok); GPU 1 the grid — on a build that (by a slip in ops.py) spun in every split part, so
#    the prefetching parts' rows ran 4-19 % slow there (LayerNorm fp32 4096×65536 1065.6 against 896.8).
#  - `ab` (~6 min): main (a721730) against that build, 2 rounds, shapes whose tiles did not change:
#    LayerNorm bf16 4096×65536 514 → 557, fp32 4096×65536 895 → 1063, 4096×16384 224 → 232 µs — same PTX
#    but for the spin, so ops.py now passes SPIN_WAIT to staged parts only; memcheck of every backward
#    split configuration the heuristics pick (staged included) 256 runs, 0 errors.
#  (The build as run had a SPIN_WAIT constexpr, passed by ops.py / ptx_stats --flags; since session 24's
#  review the kernels derive it: split parts spin exactly when their loop is staged. Same PTX.)
#  - `grid` (~4.5 min): the grid on the build as landed (copy 4227 GB/s, docs/bench_h200_run_zzzzzc.json →
#    BENCHMARKS "Current numbers"): backward RMSNorm bf16 4096×16384 115.0 → 107.4 (89 %), 8192×32768
#    440.3 → 414.0 (92 %), 4096×65536 431.7 → 417.9 (91 %), fp32 219.8 → 202.3, 850.4 → 808.5 (94 %); the
#    fused add −12 to −20 % (95-103 %); LayerNorm 2048×131072 562.2 → 508.2, 4096×16384 134.3 → 129.6;
#    the fused add's forward 4096×65536 / 2048×131072 −1.5 / −4.9 %; other rows within ±2.5 %. Then
#    LayerNorm fp32 4096×65536: main 911.3, this build 898.8 (the poll again). LayerNorm bf16 8192×32768
#    ran its staged 1 × 2048 four deep here (523.9 against run ZZZZS's 512.9): not landed.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?sweep} in
sweep)
  { tune_sweep bwd rms bf16 8192x32768,2048x131072 100 1x4096:4:split:a2:p2 1x4096:4:split:a3:p2 \
        1x2048:4:split:a2:p4 1x2048:4:split:a3:p4 1x2048:4:split:a3:p4:r128 1x4096:8:split:a2:p2:r128 \
        2x2048:4:split:a2:p2
    tune_sweep bwd rms bf16 4096x16384 40 1x4096:4:split:a2:p2 1x2048:4:split:a2:p4 1x2048:4:split:a3:p4
    tune_sweep bwd layer_norm bf16 8192x32768,2048x131072 100 2x2048:4:split:a2:p2 2x2048:4:split:a3:p2 \
        1x2048:4:split:a2:p4 1x2048:4:split:a3:p4:r128 1x2048:4:split:a3:p3 1x4096:4:split:a2:p2
    tune_sweep bwd layer_norm bf16 4096x16384 40 2x2048:4:split:a2:p2 1x2048:4:split:a2:p4 1x2048:4:split:a3:p3
    tune_sweep bwd fused_add bf16 8192x32768,2048x131072 80 1x2048:4:split:a2:p4 1x2048:4:split:a3:p4:r128 \
        1x4096:4:split:a2:p2 1x4096:8:split:a2:p2:r128
    tune_sweep fwd rms bf16 4096x65536,2048x131072 70 1x8192:4:split:a2:p4 1x8192:4:split:a2:p6 \
        1x4096:4:split:a2:p6 1x4096:4:split:a3:p4
    tune_sweep fwd fused_add bf16 4096x65536,2048x131072 60 1x4096:8:split:a2:p4 1x2048:4:split:a2:p8 \
        1x4096:4:split:a2:p6
    tune_sweep fwd layer_norm bf16 4096x65536,2048x131072 60 1x8192:4:split:a2:p4:r128 1x4096:4:split:a2:p6 \
        1x4096:4:split:a2:p4
  } 2>&1 | tee "$L/sweep.log" ;;
sweep2)
  { tune_sweep bwd rms bf16 4096x65536,1024x262144 70 1x2048:4:split:a3:p4 1x2048:4:split:a4:p4 1x4096:4:split:a3:p2 \
        1x4096:8:split:a3:p2:r128
    tune_sweep bwd rms bf16 8192x32768,4096x16384 70 1x2048:4:split:a4:p4 1x4096:8:split:a3:p2 2x2048:8:split:a3:p2 \
        1x4096:4:split:a4:p2
    tune_sweep bwd layer_norm bf16 8192x32768,4096x65536 80 1x2048:4:split:a4:p4:r128 2x2048:8:split:a3:p2:r128 \
        1x4096:8:split:a3:p2:r128 1x2048:4:split:a3:p4:r128
    tune_sweep bwd layer_norm bf16 4096x16384 30 1x2048:4:split:a3:p4:r128 1x2048:4:split:a4:p4:r128
    tune_sweep bwd fused_add bf16 4096x16384,4096x65536 50 1x2048:4:split:a3:p4:r128 1x2048:4:split:a4:p4:r128
    for family in rms layer_norm fused_add; do
      tune_sweep bwd $family fp32 4096x65536 50 1x1024:4:split:a3:p4 1x2048:4:split:a3:p2 1x2048:8:split:a3:p2 \
          1x1024:4:split:a4:p4
    done
    TUNE_ARGS="--recompute" tune_sweep bwd layer_norm bf16 2048x131072 30 1x2048:4:split:a3:p4:r128
    TUNE_ARGS="--recompute" tune_sweep bwd rms bf16 2048x131072 30 1x2048:4:split:a3:p4
    tune_sweep fwd fused_add bf16 4096x65536 30 1x2048:4:split:a3:p8 1x2048:4:split:a4:p6
  } 2>&1 | tee "$L/sweep2.log" ;;
sleep)
  # the spin's back-off: nanosleep 0 (a tight loop), 20, 64 (the tree), 200 and 600 ns between reads
  for ns in 0 20 200 600; do
    patched_copy /tmp/ab/ns$ns
    if [ $ns = 0 ]; then sed -i '/nanosleep.u32 64;/d' /tmp/ab/ns$ns/normkit/kernels/stats.py
    else sed -i "s/nanosleep.u32 64;/nanosleep.u32 $ns;/" /tmp/ab/ns$ns/normkit/kernels/stats.py; fi
    grep -c nanosleep /tmp/ab/ns$ns/normkit/kernels/stats.py
  done
  arm() {
    TUNE_LIMIT=50 tune_in "$1" --kind bwd --family rms --dtype bf16 --shapes 8192x32768,2048x131072 \
        --config 1x2048:4:split:a3:p4 --config 1x4096:4:split:a3:p2 | sed -E "s/ best .*//"
    TUNE_LIMIT=40 tune_in "$1" --kind bwd --family layer_norm --dtype bf16 --shapes 4096x65536 \
        --config 1x4096:8:split:a3:p2:r128 --config 1x2048:4:split:a4:p4:r128 | sed -E "s/ best .*//"
    TUNE_LIMIT=30 tune_in "$1" --kind bwd --family fused_add --dtype bf16 --shapes 4096x65536 \
        --config 1x2048:4:split:a3:p4:r128 | sed -E "s/ best .*//"
  }
  ab_rounds 1 arm /tmp/ab/ns0 /tmp/ab/ns20 "$PWD" /tmp/ab/ns200 /tmp/ab/ns600 | tee "$L/sleep.log" ;;
sweep3)
  { tune_sweep bwd rms fp32 4096x16384,2048x131072 50 1x2048:8:split:a3:p2 1x1024:4:split:a3:p4
    tune_sweep bwd fused_add fp32 4096x16384,2048x131072 50 1x1024:4:split:a3:p4 1x2048:8:split:a3:p2
    tune_sweep bwd fused_add bf16 1024x262144 25 1x2048:4:split:a3:p4
    tune_sweep bwd layer_norm bf16 1024x262144 30 1x2048:4:split:a3:p4 1x4096:8:split:a3:p2:r128
    tune_sweep bwd layer_norm bf16 4096x65536 40 1x4096:8:split:a4:p2:r128 2x2048:4:split:a4:p2 1x2048:4:split:a3:p3
    TUNE_ARGS="--recompute" tune_sweep bwd rms bf16 4096x16384,8192x32768 40 1x2048:4:split:a3:p4
    TUNE_ARGS="--recompute" tune_sweep bwd layer_norm bf16 4096x16384 25 1x2048:4:split:a3:p4
    TUNE_ARGS="--recompute" tune_sweep bwd rms fp32 4096x65536 25 1x2048:8:split:a3:p2
    tune_sweep fwd fused_add bf16 2048x131072,1024x262144 40 1x2048:4:split:a3:p8
    tune_sweep fwd rms bf16 2048x131072 25 1x4096:4:split:a3:p8 1x2048:4:split:a3:p8
  } 2>&1 | tee "$L/sweep3.log" ;;
both)
  # (nvidia-h200-x2) GPU 0: the check-mode split tests (staged configs added) and memcheck of every split
  # configuration the heuristics pick; GPU 1: every family side by side (the grid) on this build
  ( export CUDA_VISIBLE_DEVICES=0
    checked_tests 270 tests/test_split_rows.py
    memcheck_split bwd 150
    memcheck_split fwd 90 ) > "$L/checks.log" 2>&1 &
  ( export CUDA_VISIBLE_DEVICES=1; side_by_side 560 ) &
  wait
  cat "$L/checks.log" ;;
ab)
  # main (a721730, docs/experiments/split-spin-wait.patch reversed) against this build, 2 rounds: shapes
  # whose tiles did not change (their SASS is the same) but moved in the grid of `both` (LayerNorm bf16 /
  # fp32 4096×65536 +9 / +19 %, fp32 4096×16384 +5 %) and RMSNorm's plain 16384×1024; then memcheck of
  # the backward's split configurations with time to finish (it stopped at 150 s in `both`)
  B=/tmp/ab/base
  patched_copy $B -R docs/experiments/split-spin-wait.patch
  arm() {
    TUNE_LIMIT=40 tune_in "$1" --kind bwd --family layer_norm --dtype bf16 --shapes 4096x65536 \
        --config 2x2048:4:split:pf:p2 | sed -E "s/ best .*//"
    TUNE_LIMIT=40 tune_in "$1" --kind bwd --family layer_norm --dtype fp32 --shapes 4096x65536,4096x16384 \
        --config 1x2048:4:split:pf:p3:reload | sed -E "s/ best .*//"
    TUNE_LIMIT=30 tune_in "$1" --kind bwd --family rms --dtype bf16 --shapes 16384x1024 --config 2x1024:4 \
        | grep heuristic | sed -E "s/ best .*//"
  }
  ab_rounds 2 arm $B "$PWD" | tee "$L/ab.log"
  [ "${2:-}" = nomemcheck ] || memcheck_split bwd 300 ;;
grid)
  # the build as landed (ops passes SPIN_WAIT only to staged parts — `both` ran every split part spinning,
  # which slowed the prefetching ones: `ab`), every family side by side; then `ab`'s LayerNorm fp32 line
  side_by_side 330
  arm() {
    TUNE_LIMIT=30 tune_in "$1" --kind bwd --family layer_norm --dtype fp32 --shapes 4096x65536 \
        --config 1x2048:4:split:pf:p3:reload | sed -E "s/ best .*//"
  }
  B=/tmp/ab/base
  patched_copy $B -R docs/experiments/split-spin-wait.patch
  ab_rounds 1 arm $B "$PWD" | tee "$L/ab.log" ;;
esac
pack_logs
