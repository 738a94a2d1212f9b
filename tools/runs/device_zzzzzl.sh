#!/usr/bin/env bash
# Device run ZZZZZL (prepared in session 28 for the next session, nvidia-h200; carry [".whl"]):
#  Why: run ZZZZZK's Nsight Compute put LayerNorm's staged backward parts (4096×16384, 1 × 2048 on 4
#  warps, four an SM) at 67 % of scheduler cycles issuing with not_selected the top stall — issue-bound —
#  while the deeper exchange (lag 2) changed nothing: the instruction count a row block is the lever now
#  (session 26's 6-10 % cut moved nothing while the parts waited two L2 round trips a block; design change
#  32 halved that wait since).
#  docs/experiments/backward-issue-diet.patch: (1) EVEN_COLS — where N is a multiple of the tile (every
#  split part full, or a whole row of a power of two) the column mask is a constant, so it folds away
#  (ops.launch_bwd passes it, tools/ptx_stats.py too); (2) LayerNorm's split parts finish a block with rstd
#  folded in first (_dh_scaled: dh·rstd = dy·(w·rstd) − (ĥ·c₁·rstd + c₂·rstd), two element-wise ops fewer;
#  RMSNorm's and the fused add's keep _dh — folded in, the fused add's loop grew 493 → 510). Count
#  (tools/ptx_stats.py --sass, sm_90, the row loop a thread an iteration, with session 28's launch
#  specialisation): LayerNorm bf16 1 × 2048 564 → 541 (−4.1 %), 1 × 4096 880 → 818 (−7.0 %); RMSNorm
#  1 × 2048 442 → 423 (−4.3 %), 1 × 4096 694 → 648 (−6.6 %); the fused add 493 → 464 (−5.9 %); 0 B spilled
#  everywhere, registers ±5 (LayerNorm 1 × 4096 251 → 242). CPU: the whole suite in the interpreter on the
#  patched tree, 842 passed (EVEN_COLS on the whole-row paths; the two tests/test_tools.py cases that read
#  BENCHMARKS.md failed only for the copy's lack of it); _dh_scaled runs only in split parts: GPU only.
#  - `ab` (~5 min): A/B, 2 rounds, tools/tune.py --heuristic-only, base = this tree, new = + the patch
#    (split_bwd_arm, plus whole-row controls 16384×4096 LayerNorm / RMSNorm / the fused add bf16).
#    Prediction: LayerNorm bf16 4096×16384 117 → 112-115 (−2 to −4 %), 8192×32768 / 2048×131072 (1 × 4096
#    parts) −3 to −6 %; RMSNorm −1 to −3 %; the fused add ±1 % (86 % of DRAM peak: memory-bound); the
#    whole-row controls ±1 %. If LayerNorm moves < 1 %: the parts are not issue-bound after all — the
#    not_selected stall is other warps' issue, not a shortage of slots.
#  - `checks` (~4 min): a tree with both patches — the diet and docs/experiments/split-fp64-paired-wait.patch
#    (session 27's review leftover: stats._spin_receive awaited a float64 word's two halves one after the
#    other; `_await_two_words`, LayerNorm's checked pair, awaits both: compile_check 75 ok) — its
#    tests/test_split_rows.py in check mode (LayerNorm's split parts: _dh_scaled's only coverage; the
#    float64 staged parts: the pairing's) and memcheck of its split backward (120 s). If both pass and the
#    diet wins: apply both, the fp64 one with a note (no heuristic picks float64 staged parts: no timing).
#  - `capsweep` (~1 min, this tree): LayerNorm's bf16 forward at 8192×32768, where torch.compile leads (281
#    against 317 µs) — its three-read 1 × 8192 tile on 16 warps takes 40 registers (tools/ptx_stats.py with
#    session 28's corrected specialisation: three programs an SM, 48 warps), capped at 32 it keeps 0 B
#    spilled and fits four (64 warps: Inductor's occupancy, 2 × 32 warps at 32 registers, run ZZX). Run
#    ZZZZZK timed the 1 × 16384 on 32 warps capped (377.0) against uncapped (461.9): the cap mattered there.
#    Also 1 × 4096 on 8 capped (eight an SM, 0 B). Prediction: 1 × 8192 on 16 capped 317 → 295-305; if it
#    wins ≥ 3 %, set _FWD_LAYER_NORM_CENTERED[32768]'s cap to 32 and A/B it (8192×32768, 16384×32768).
#    And LayerNorm's bf16 backward rows of 2048 (16384×2048 on the 90 % line; 4096×2048 68 %): its staged
#    2 × 2048 tile on 4 warps takes 176 registers (two an SM) where RMSNorm's takes 162 (three); capped at
#    168, 4 B spilled, three fit. Prediction: 16384×2048 ±2 % (the tile reads at ~90 % already), 4096×2048
#    −2 to −5 % (a launch of 8 row blocks a program: more programs, shorter tail).
#  Outcome (session 29; BENCHMARKS design change 35): `ab` (µs, rounds 1 / 2, main → diet): LayerNorm bf16
#    4096×16384 117.0 / 118.4 → 114.8 / 114.2 (−2.7 %: met), 8192×32768 440.1 / 440.0 → 431.0 / 429.1,
#    2048×131072 456.8 / 457.5 → 445.6 / 445.6 (−2.3 / −2.5 %: short of −3 %), the fused LayerNorm 146.5 /
#    145.6 → 136.9 / 136.4 (−6.5 %); RMSNorm −0.7 to −1 % (low edge); the fused add and whole-row controls
#    ±0.7 % (met) — issue-bound, as Nsight Compute said. LayerNorm fp32 203.7 / 204.5 → 207.3 / 204.8: traced
#    to EVEN_COLS in run ZZZZZM (tools/runs/device_zzzzzm.sh), which landed for 2-byte inputs only.
#    `checks`: test_split_rows in check mode 275 passed, 1 skipped (interpreter-only); memcheck 62 split
#    configs ok, 0 failed, no error (stopped at 120 s; ragged N only). `capsweep`: both caps LOST — 1 × 8192
#    on 16 capped 32: 343.7 against 317.0 (8192×32768), 682.8 / 621.8 (16384×32768); 1 × 4096 on 8 capped
#    518.0, 1 × 16384 on 32 capped 377.0; backward 2 × 2048 capped 168: 56.8 / 52.5 (16384×2048), 18.1 / 17.3
#    (4096×2048). Occupancy is not what those tiles lack.
#    Both patches landed and left docs/experiments (tools/runs/device_zzzzzm.sh says how to get them back).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
N=/tmp/ab/diet
case $1 in
  ab) patched_copy $N docs/experiments/backward-issue-diet.patch ;;
  checks) patched_copy $N docs/experiments/backward-issue-diet.patch docs/experiments/split-fp64-paired-wait.patch ;;
esac
case ${1:?ab|checks|capsweep} in
ab)
  arm() {
    split_bwd_arm "$1"
    heuristic_in "$1" 40 --kind bwd --family layer_norm --dtype bf16 --shapes 16384x4096
    heuristic_in "$1" 40 --kind bwd --family rms --dtype bf16 --shapes 16384x4096
    heuristic_in "$1" 40 --kind bwd --family fused_add --dtype bf16 --shapes 16384x4096
  }
  ab_rounds 2 arm "$PWD" $N | tee "$L/ab.log" ;;
capsweep)
  tune_sweep fwd layer_norm bf16 8192x32768,16384x32768 60 1x8192:16:col:two 1x8192:16:col:two:r32 \
      1x4096:8:col:two:r32 1x16384:32:col:two:r32 2>&1 | tee "$L/capsweep.log"
  tune_sweep bwd layer_norm bf16 16384x2048,4096x2048 40 2x2048:4:a3:p2 2x2048:4:a3:p3:r168 2>&1 | tee -a "$L/capsweep.log" ;;
checks)
  ( cd $N && export PYTHONPATH=/tmp/site:$N
    checked_tests 200 tests/test_split_rows.py
    memcheck_split bwd 120 ) ;;
esac
pack_logs
