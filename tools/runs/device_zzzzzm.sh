#!/usr/bin/env bash
# Device run ZZZZZM (session 29, nvidia-h200; carry [".whl"]):
#  Design change 35 applied (docs/experiments/backward-issue-diet.patch: EVEN_COLS and LayerNorm's split
#  parts' _dh_scaled; docs/experiments/split-fp64-paired-wait.patch) after run ZZZZZL's A/B (2 rounds, µs:
#  LayerNorm bf16 bwd 4096×16384 117.7 → 114.5, 8192×32768 440.1 → 430.1, 2048×131072 457.2 → 445.6, the
#  fused LayerNorm 146.1 → 136.7; RMSNorm −0.7 to −1 %; the fused add and whole-row controls ±0.7 %).
#  - `grid` (~6 min): the side-by-side report (normkit, eager, torch.compile, Liger) on this tree.
#    Prediction, against grid ZZZZZK2 (% of copy): LayerNorm bf16 backward 4096×16384 82 → 84-85, 8192×32768
#    86 → 88, 4096×65536 85 → 86-88, 2048×131072 84 → 86-87; the fused LayerNorm's 4096×16384 89 → 93-95;
#    RMSNorm ±1 point; every forward and whole-row backward ±2 %.
#  Outcome: grid 1 (copy 4228 GB/s, docs/bench_h200_run_zzzzzm.json): LayerNorm bf16 backward 4096×16384
#    117.9 → 115.5 µs, 8192×32768 447 → 436, 4096×65536 454 → 446, 2048×131072 461 → 450, the fused LayerNorm
#    4096×16384 145.2 → 138.4, 2048×131072 557 → 531; RMSNorm −1 to −2 % — as predicted; but LayerNorm fp32
#    4096×16384 201.7 → 207.4 (→ `fp32ab`). Grid 2, as landed (EVEN_COLS for 2-byte inputs; copy 4188,
#    docs/bench_h200_run_zzzzzm2.json → BENCHMARKS "Current numbers"): LayerNorm bf16 backward 84 / 88 / 87 /
#    86 %, the fused LayerNorm 93 %, LayerNorm fp32 4096×16384 201.3; every other row ±1.7 % but the
#    smallest shapes.
#  - `fp32ab` (~4 min; carry also ".ab_base" — git archive of daa6c79, the tree before design change 35): the
#    grid put LayerNorm fp32 backward 4096×16384 at 207.4 µs where four grids running (ZZZZZF … ZZZZZK2) read
#    201.1-201.7, and run ZZZZZL's A/B had it +1.8 % / +0.1 % (2 rounds). Three arms, 3 rounds: base (.ab_base),
#    diet (this tree), and this tree + docs/experiments/dh-scaled-2-byte-only.patch (float32 inputs keep `_dh`;
#    EVEN_COLS stays: row loop 516 → 489 instructions, against the diet's 475; 158 registers, three an SM, as
#    the base). Shapes: LayerNorm fp32 4096×16384, 4096×65536, the fused LayerNorm fp32 4096×16384.
#    Prediction: if _dh_scaled slows float32 parts, diet +1.5-3 % and the variant within ±0.5 % of base; if not,
#    all three within 1 % (the grid's +2.8 % a bad draw).
#  Outcome (means, µs, base / diet / variant): LayerNorm fp32 4096×16384 201.1 / 205.1 / 204.1, 4096×65536
#    762.0 / 769.4 / 771.2, the fused LayerNorm fp32 258.9 / 259.5 / 259.8: the variant did not restore the
#    base — `_dh_scaled` is not the cause (so it stays for every LayerNorm split part).
#  - `evenab` (~3 min, carry as fp32ab): the same three-way A/B with the variant docs/experiments/
#    even-cols-2-byte-only.patch (EVEN_COLS only for 2-byte inputs) and RMSNorm fp32 added, 2 rounds.
#    Prediction: the variant at base ±0.5 % for LayerNorm fp32 (EVEN_COLS the cause); RMSNorm fp32 ±1 % all.
#  Outcome (means, µs, base / diet / variant): LayerNorm fp32 4096×16384 201.1 / 203.6 / 201.3, 4096×65536
#    763.4 / 765.3 / 764.3; RMSNorm fp32 4096×16384 202.9 / 203.9 / 202.9, 4096×65536 812.3 / 817.3 / 811.7:
#    EVEN_COLS costs float32 0.3-1.2 %, so it landed for 2-byte inputs only (config.even_cols). The landed
#    patches (backward-issue-diet, split-fp64-paired-wait) were then removed from docs/experiments: `git
#    log --diff-filter=D --oneline -- docs/experiments` names the commit, `git show COMMIT^:docs/experiments/
#    NAME.patch` gives one back. even-cols-2-byte-only.patch was never committed: its one change is
#    ops.launch_bwd's EVEN_COLS gaining `and x.element_size() < 4` (now config.even_cols), so `evenab`
#    reruns only from a tree before design change 35 with that line written back.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?grid|fp32ab|evenab} in
grid) side_by_side 420 ;;
evenab)
  V=/tmp/ab/evenoff; patched_copy $V docs/experiments/even-cols-2-byte-only.patch
  arm() {
    heuristic_in "$1" 60 --kind bwd --family layer_norm --dtype fp32 --shapes 4096x16384,4096x65536
    heuristic_in "$1" 60 --kind bwd --family rms --dtype fp32 --shapes 4096x16384,4096x65536
  }
  ab_rounds 2 arm "$PWD/.ab_base" "$PWD" $V | tee "$L/evenab.log" ;;
fp32ab)
  V=/tmp/ab/fp32keep; patched_copy $V docs/experiments/dh-scaled-2-byte-only.patch
  arm() {
    heuristic_in "$1" 60 --kind bwd --family layer_norm --dtype fp32 --shapes 4096x16384,4096x65536
    heuristic_in "$1" 40 --kind bwd --family layer_norm --residual --dtype fp32 --shapes 4096x16384
  }
  ab_rounds 3 arm "$PWD/.ab_base" "$PWD" $V | tee "$L/fp32ab.log" ;;
esac
pack_logs
