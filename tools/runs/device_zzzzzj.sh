#!/usr/bin/env bash
# Device run ZZZZZJ (prepared in session 27 for the next session, nvidia-h200; carry [".whl"]):
#  - `ab` (~5 min): docs/experiments/split-exchange-lag2.patch — the backward's staged split parts finish
#    block t − 2 at iteration t (EXCHANGE_LAG = 2; TileConfig.exchange_lag, tune's ":lK"), not t − 1: the
#    words awaited were published a whole iteration earlier, while each partner loaded and reduced block
#    t − 1. Why: session 27's early-wait experiment (docs/experiments/split-early-wait.patch, run ZZZZZG)
#    read block t − 1's words at the top of iteration t and lost 10-27 % — the words had most likely not
#    arrived yet (partners publish in step), so the wait is the slowest partner's publish, which a lag of
#    two blocks takes off the critical path. Cost: one more row block held (or re-read: RELOAD), the ring
#    of exchange slots 4 → 8 (stats.RING: a part publishing t may have partners still to read t − 5), two
#    extra loop iterations. Count (tools/ptx_stats.py, sm_90, session 27): the bf16 1 × 2048 parts 94-118
#    registers (LayerNorm 128 capped → 94, RMSNorm 121 → 95, the fused add 128 → 118), 1 × 4096 151-168
#    (240 / 211 before), fp32 48-91 (72-160), 0 B spilled; bar.sync 13 → 21 (LayerNorm 1 × 2048), 21 → 37
#    (1 × 4096); the row loop's SASS 572 → 483 instructions (the compiler reshaped the loop: treat with
#    care); compile_check 87 ok (lag 2 held and re-read, bf16 / fp32 / fp64).
#    A/B, 2 rounds, tools/tune.py --heuristic-only, base = main, new = main + the patch (the heuristic's
#    staged parts take lag 2); then the patched build's split tests in check mode.
#    Prediction: LayerNorm bf16 4096×16384 117 → 100-108 µs, 8192×32768 440 → 400-420, RMSNorm 4096×16384
#    108 → 98-104, the fused add and the fused LayerNorm alike, fp32 −2 to −5 %, rows of 131072 (32-64
#    parts) −3 to −8 %. If it loses everywhere: the wait is not the partners' lateness either.
#  - `sweep` (~2 min, the patched build): lag 1 against lag 2 in one process, held and re-read, and five
#    parts an SM where the registers now allow it (LayerNorm / RMSNorm bf16 1 × 2048: 94-95 registers).
#  - `fwdsweep` (~1 min, main): LayerNorm's bf16 forward where torch.compile leads (grid ZZZZZH: 4096×16384
#    72.8 against 68.6 µs, 8192×32768 315 against 280): torch.compile's looped three-read kernel is 1 ×
#    16384 on 32 warps (tools/inductor_code.py, run ZZX); normkit's three-read tiles are 1 × 8192 on 16
#    at 32768 and were never timed at 16384, nor as 1 × 16384 on 32 at 32768. Also the whole row on 32
#    warps re-read (48 registers). Prediction: a three-read 1 × 16384 on 32 at 8192×32768 ≤ 300 µs; at
#    4096×16384 the re-read whole row stays (column tiles read the row three times from L2). And
#    LayerNorm's capped 16 KB split parts (its rows of 131072) at 65536 / 32768, where they tied / lost
#    before design change 32 made the forward's exchange one paired wait (349.1 against 350.7 at
#    4096×65536; 356.5 against 318.8 at 8192×32768; 2048×131072 then moved 349 → 328): at 4096×65536
#    ≤ 335 µs predicted.
#  - `ncu` (~2 min, main): why LayerNorm's forward 4096×16384 with the whole row held runs 112 µs against
#    72.6 re-read (runs ZZN, ZZZZZH; RMSNorm's held row 71), at the same 63 registers (ptxas, sm_90, two
#    an SM), the same 16-byte loads (held: L1/L2 evict_first on x — STREAM —, re-read: evict_last then
#    evict_first): DRAM bytes, occupancy and stalls of each. Prediction: the held tile reads the minimum
#    bytes too, so the gap is in the stalls (long scoreboard) — else the hint is what costs.
#  - `checks` (~5 min): the patched build's whole tests/test_split_rows.py in check mode, then memcheck of
#    its split backward (150 s).
#  Outcome (session 28): `ab` ran (171 s) and was VOID — every lag-2 part mismatched the column-tiled reference
#    (tune's ok=False; its times, e.g. LayerNorm 4096×16384 114.6-116.4 against 117.5, came from parts
#    finishing their rows from zeros): the patch's `old_h = prev_h` made Triton drop both carried tiles
#    (found on the CPU, fixed; tools/runs/device_zzzzzk.sh's header). The other cases were not run here: the
#    fixed patch's sweep and `fwdsweep` ran as run ZZZZZK; `ncu` and `checks` were left.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
N=/tmp/ab/lag2
patched_copy $N docs/experiments/split-exchange-lag2.patch
case ${1:?ab|sweep|fwdsweep|ncu|checks} in
ab)
  arm() {
    split_bwd_arm "$1"
    heuristic_in "$1" 40 --kind bwd --family rms --dtype fp32 --shapes 4096x16384
  }
  ab_rounds 2 arm "$PWD" $N | tee "$L/ab.log" ;;
sweep)
  ( cd $N && export PYTHONPATH=/tmp/site:$N
    tune_sweep bwd layer_norm bf16 4096x16384,8192x32768 80 1x2048:4:split:a3:p4:r128 1x2048:4:split:a3:p4:r128:l2 \
        1x2048:4:split:a3:p5:r102:l2 1x4096:4:split:a3:p2:l2 1x4096:4:split:a3:p3:r170:l2
    tune_sweep bwd rms bf16 4096x16384,2048x131072 60 1x2048:4:split:a3:p4:r128 1x2048:4:split:a3:p4:r128:l2 \
        1x2048:4:split:a3:p5:r102:l2 1x4096:4:split:a3:p2:l2 1x4096:4:split:a3:p3:r170:l2
  ) 2>&1 | tee "$L/sweep.log" ;;
fwdsweep)
  layer_norm_fwd_sweep 2>&1 | tee "$L/fwdsweep.log" ;;
ncu)
  ncu_stalls fwd ln_held --kind fwd --family layer_norm --shape 4096x16384 --config 1x16384:16
  ncu_stalls fwd ln_reload --kind fwd --family layer_norm --shape 4096x16384 --config 1x16384:16:reload
  ncu_stalls fwd rms_held --kind fwd --family rms --shape 4096x16384 --config 1x16384:16 ;;
checks)
  ( cd $N && export PYTHONPATH=/tmp/site:$N
    checked_tests 240 tests/test_split_rows.py
    memcheck_split bwd 150 ) ;;
esac
pack_logs
