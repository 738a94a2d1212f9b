#!/usr/bin/env bash
# Device run ZZZZZN (prepared in session 29 for the next session, nvidia-h200; carry [".whl"]):
#  Why: design change 35 showed the staged backward parts issue-bound (4-7 % fewer instructions a row
#  block: LayerNorm's split backward −2-3 %, the fused LayerNorm's −6.5 %). What is left in their row loop
#  (tools/ptx_stats.py --sass, sm_90; the per-line breakdown of LayerNorm's bf16 1 × 2048 part): every bf16
#  → float32 upcast of a register's high element costs two instructions — a PRMT moving it into a register
#  of its own, then the shift — where one does (x & 0xffff0000); h and dy are upcast twice a row block
#  (the sums, then dh), the weight once. And ĥ = (h − μ)·rstd is an FADD and an FMUL where one FFMA does.
#  docs/experiments/bf16-pairs.patch: kernels/convert.upcast (inline PTX, tl.inline_asm_elementwise pack=2:
#  a register's low element shifted up, the high one masked — bitwise t.to(float32)), BF16_PAIRS on every
#  bf16 upcast of both families (ops: the backward everywhere on a GPU; the forward's split parts and
#  column tiles only — its whole-row tiles spilled with it: RMSNorm 1 × 16384 on 16 capped 0 → 64 B,
#  1 × 65536 on 32 0 → 92 B); CENTER_FMA (the backward's LayerNorm split parts, 2-byte h: ĥ = h·rstd +
#  (−μ·rstd), one FFMA; at most ½ulp(|μ|·rstd) more error in ĥ, below what a 2-byte h resolves).
#  docs/experiments/bf16-pairs-no-center-fma.patch (on top): CENTER_FMA off — the third arm.
#  docs/experiments/forward-split-diet.patch (on top of bf16-pairs, `fwdab`'s third arm): the forward's split
#  parts (LayerNorm, RMSNorm) without a column mask where every part is full (EVEN_COLS; then LayerNorm's
#  centred sum needs no select: stats.publish_row_sums), x̂ in one FFMA for LayerNorm's 2-byte x (split
#  parts and column tiles: _center — the column tiles' is the one CPU-tested path, the interpreter's wide
#  rows), and RMSNorm's split parts without a zero weight offset's add (HAS_WEIGHT_OFFSET: kept for its
#  whole rows for registers, run ZS). Not the fused add's parts: unmasked they took 76 registers, not 72.
#  Row loop: RMSNorm 1 × 8192 815 → 717 (911 before either patch), LayerNorm 1 × 8192 1216 → 1030 (1338),
#  its three-read output loop 148 → 132 (172); registers ≤ before, 0 B spilled; compile_check 75 ok; the
#  whole CPU suite on the tree with both patches: 833 passed, 358 skipped.
#  Count (row loop a thread an iteration, before → after; 0 B spilled everywhere, registers ±6):
#   backward LayerNorm 1 × 2048 parts 541 → 503 (−7.0 %; 525 with CENTER_FMA alone, 519 with pairs alone),
#   1 × 4096 parts 818 → 767 (−6.2 %); RMSNorm 1 × 2048 423 → 414, 1 × 4096 648 → 629; the fused add
#   464 → 447; whole rows (staged) −5 to −9 % (LayerNorm 2 × 2048 692 → 658, RMSNorm 497 → 463, the fused
#   add 579 → 529); forward split parts RMSNorm 1 × 8192 911 → 815 (−10.5 %), LayerNorm 1 × 8192 1338 →
#   1216 (−9.1 %), the fused add's 446 → 420; LayerNorm's three-read 1 × 8192 output loop 172 → 148 (−14 %).
#  Not everywhere: in RMSNorm's 1 × 2048 parts ptxas still splits each pair (a PRMT and a shift a
#  high element in SASS, though the PTX holds the 40 asm blocks as LayerNorm's does — the held bf16
#  tile lives as 16-bit halves and is re-packed for the asm), hence its 423 → 414 only; reading the
#  tiles as 32-bit words (session 26's docs/experiments/backward-bf16-words.patch, with its row −1 defect
#  fixed) is the way there if the LayerNorm rows show the upcasts matter.
#  CPU: compile_check 75 ok; tests/test_ops, test_split_rows, test_gpu_compile, test_tools, test_functional
#  passed on the patched tree (the interpreter never takes BF16_PAIRS: inline PTX; CENTER_FMA is split-only).
#  So only a GPU says the pairs come back in order — and tools/tune.py's ok=True cannot: its reference is
#  the same build's column-tiled kernel, which takes the pairs too. Run `checks` FIRST (the tests compare
#  with float64 references); time nothing until it passes.
#  - `ab` (~7 min): 2 rounds, tools/tune.py --heuristic-only; arms: this tree, + bf16-pairs, + both
#    patches (LayerNorm rows only). Prediction: LayerNorm bf16 backward 4096×16384 114.5 → 108-112,
#    8192×32768 / 2048×131072 −2 to −5 %; the fused LayerNorm −2 to −5 %; RMSNorm −1 to −2 %; the fused add
#    ±1 % (memory-bound); whole rows 16384×4096 ±1 % (93-98 % of copy: memory-bound). CENTER_FMA alone
#    worth about half of LayerNorm's gain. If LayerNorm moves < 1 %, the upcasts were not on the issue path.
#  - `fwdab` (~7 min): 2 rounds, the forwards; arms: this tree, + bf16-pairs, + bf16-pairs and
#    forward-split-diet. Prediction (pairs / pairs + diet): RMSNorm bf16 2048×131072 292 → 280-288 /
#    270-282; LayerNorm 4096×65536 / 2048×131072 325 → 310-320 / 295-312; LayerNorm 8192×32768 (three
#    reads) 315 → 300-312 / 295-308; RMSNorm fp32 4096×65536 (diet only: offset, mask) 576 → 560-576,
#    LayerNorm fp32 609 → 590-609; the fused add's split parts ±1 % (94-96 %: memory-bound); control
#    16384×4096 ±1 % (untouched). If the forwards do not move, they are latency-bound, not issue-bound.
#  - `checks` (~5 min, first): the tree with both patches in check mode on the GPU — tests/test_convert.py (new in the
#    patch: upcast's pairs bitwise against .to(float32), every bf16 bit pattern, element by element),
#    tests/test_split_rows.py (every split part), tests/test_ops.py (whole rows both ways, bf16 among the
#    dtypes), then memcheck of the split backward (120 s). (The split forward's memcheck, `memcheck_split
#    fwd`, if time allows: EVEN_COLS drops its column mask.)
#  If `ab` or `fwdab` wins and `checks` passes: apply bf16-pairs.patch (the backward's CENTER_FMA only if
#  its arm shows it) and forward-split-diet.patch if its arm wins, write design change 36, then the grid
#  (`grid`).
#  Outcome (session 30; BENCHMARKS design change 36 and section "Session 30"; the patches named above were
#  landed or regenerated since: bf16-pairs → landed, its split-parts half → docs/experiments/
#  backward-split-bf16-pairs.patch, no-center-fma → dropped, forward-split-diet → regenerated on the landed
#  tree — so `ab`, `fwdab`, `mixab` no longer apply to HEAD; `dietab` and `grid` do):
#  - `checks`: test_convert + test_split_rows 283 passed, 1 skipped; test_ops 2 FAILED — (1, 1) bf16 backward:
#    Triton refused the packed asm on one element a thread. Fixed (config.holds_pairs); `recheck`: 129 passed.
#    memcheck split bwd 58 ok, 0 failed (120 s limit).
#  - `ab` (2 rounds, µs, rounds 1 / 2; main → pairs → no CENTER_FMA): the prediction failed for the split
#    parts — LayerNorm 4096×16384 114.6 / 114.6 → 114.7 / 114.9 → 114.6 / 114.7, 8192×32768 433.3 / 433.0 →
#    434.3 / 436.4 → 437.5 / 437.4, 2048×131072 449.1 / 449.1 → 450.0 / 452.2 → 453.4 / 452.4; RMSNorm
#    2048×131072 432.9 / 430.8 → 436.3 / 438.7 (+1.3 %); the fused LayerNorm 136.6 / 136.0 → 134.9 / 135.1;
#    whole rows −0.6 to −0.9 % (LayerNorm 16384×4096 103.0 / 103.1 → 102.4 / 102.0, RMSNorm 99.7 / 99.8 →
#    99.0 / 99.2, the fused add 128.0 / 129.2 → 127.6 / 127.7). CENTER_FMA worth 0.5-1 % on the pairs arm.
#  - `fwdab` (main → pairs alone: the diet arm void, see `dietab`): LayerNorm bf16 8192×32768 318.3 / 317.7 →
#    306.3 / 306.4, 4096×65536 323.7 / 325.2 → 316.0 / 318.1, 2048×131072 324.6 / 327.6 → 317.7 / 313.9 (inside
#    the prediction); RMSNorm 2048×131072 292.4 / 291.0 → 289.5 / 289.7 (short of it); others ±0.7 %.
#  - `mixab` (main → pairs for whole rows only, CENTER_FMA in split parts: landed): LayerNorm split −0.6 to
#    −0.8 %, whole rows −0.2 to −0.8 %, the fused add ±0.
#  - `dietab` (landed → + forward-split-diet): −0.8 % to +0.6 %, noise: dropped.
#  - `grid` (copy 4232 GB/s) → docs/bench_h200_run_zzzzzn.json, BENCHMARKS "Current numbers".
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
P=/tmp/ab/pairs; F=/tmp/ab/nofma; D=/tmp/ab/fwddiet; W=/tmp/ab/wholepairs
case ${1:?ab|fwdab|checks|recheck|mixab|dietab|grid} in
ab|fwdab) patched_copy $P docs/experiments/bf16-pairs.patch ;;&
ab) patched_copy $F docs/experiments/bf16-pairs.patch docs/experiments/bf16-pairs-no-center-fma.patch ;;
mixab) patched_copy $W docs/experiments/bf16-pairs.patch docs/experiments/bf16-pairs-whole-rows.patch ;;
fwdab|checks|recheck) patched_copy $D docs/experiments/bf16-pairs.patch docs/experiments/forward-split-diet.patch ;;
esac
case $1 in
ab)
  arm() {
    if [ "$1" = $F ]; then  # CENTER_FMA's share: LayerNorm's split parts only
      heuristic_in "$1" 70 --kind bwd --family layer_norm --dtype bf16 --shapes 4096x16384,8192x32768,2048x131072
      heuristic_in "$1" 40 --kind bwd --family layer_norm --residual --dtype bf16 --shapes 4096x16384
      return
    fi
    split_bwd_arm "$1"
    heuristic_in "$1" 40 --kind bwd --family layer_norm --dtype bf16 --shapes 16384x4096,16384x2048
    heuristic_in "$1" 40 --kind bwd --family rms --dtype bf16 --shapes 16384x4096,4096x2048
    heuristic_in "$1" 40 --kind bwd --family fused_add --dtype bf16 --shapes 16384x4096
  }
  ab_rounds 2 arm "$PWD" $P $F | tee "$L/ab.log" ;;
fwdab)
  arm() {
    heuristic_in "$1" 40 --kind fwd --family rms --dtype bf16 --shapes 2048x131072
    heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype bf16 --shapes 8192x32768,4096x65536,2048x131072,16384x4096
    heuristic_in "$1" 40 --kind fwd --family fused_add --dtype bf16 --shapes 4096x65536,2048x131072
    heuristic_in "$1" 40 --kind fwd --family layer_norm --residual --dtype bf16 --shapes 4096x65536
    heuristic_in "$1" 40 --kind fwd --family rms --dtype fp32 --shapes 4096x65536
    heuristic_in "$1" 40 --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536
  }
  ab_rounds 2 arm "$PWD" $D | tee "$L/fwdab.log" ;;  # session 30: two arms (device time), pairs + diet against this tree
checks)
  ( cd $D && export PYTHONPATH=/tmp/site:$D
    checked_tests 220 tests/test_convert.py tests/test_split_rows.py
    TESTS_LOG=ops checked_tests 120 tests/test_ops.py
    memcheck_split bwd 120 ) ;;
recheck)  # session 30: `checks` failed test_ops' (1, 1) bf16 rows (packed asm on one element a thread):
  # the patch now asks ops for BF16_PAIRS only where config.holds_pairs; test_ops and test_convert again
  ( cd $D && export PYTHONPATH=/tmp/site:$D
    TESTS_LOG=ops checked_tests 150 tests/test_convert.py tests/test_ops.py ) ;;
mixab)  # session 30, after `ab`: the pairs for whole rows only (split parts keep Triton's upcast), CENTER_FMA kept
  arm() {
    heuristic_in "$1" 50 --kind bwd --family layer_norm --dtype bf16 --shapes 4096x16384,8192x32768,2048x131072,16384x4096
    heuristic_in "$1" 40 --kind bwd --family layer_norm --residual --dtype bf16 --shapes 4096x16384
    heuristic_in "$1" 40 --kind bwd --family rms --dtype bf16 --shapes 16384x4096
    heuristic_in "$1" 40 --kind bwd --family fused_add --dtype bf16 --shapes 16384x4096
  }
  ab_rounds 2 arm "$PWD" $W | tee "$L/mixab.log" ;;
dietab)  # session 30, this tree with the pairs landed: + forward-split-diet.patch (a fresh directory:
  # `fwdab`'s third arm never got it — patched_copy into a directory left by `checks` failed at bf16-pairs)
  patched_copy /tmp/ab/diet2 docs/experiments/forward-split-diet.patch
  arm() {
    heuristic_in "$1" 40 --kind fwd --family rms --dtype bf16 --shapes 2048x131072
    heuristic_in "$1" 50 --kind fwd --family layer_norm --dtype bf16 --shapes 8192x32768,4096x65536,2048x131072
    heuristic_in "$1" 40 --kind fwd --family layer_norm --residual --dtype bf16 --shapes 4096x65536
    heuristic_in "$1" 40 --kind fwd --family rms --dtype fp32 --shapes 4096x65536
    heuristic_in "$1" 40 --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536
  }
  ab_rounds 2 arm "$PWD" /tmp/ab/diet2 | tee "$L/dietab.log" ;;
grid) side_by_side 420 ;;
esac
pack_logs
