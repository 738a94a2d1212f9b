#!/usr/bin/env bash
# Device run ZZZZZF (prepared in session 25 for the next session, nvidia-h200; carry [".whl"]):
#  - `bash tools/runs/device_zzzzzf.sh checks` (~8 min): what session 25 landed and could not check for lack of
#    device time — tests/test_split_rows.py whole in check mode (new: the forward's staged held parts on
#    rows that are not vector-aligned, (33, 40001, 1 × 2048 three deep), every family and dtype), then
#    memcheck of every backward split configuration the heuristics pick (new since session 24's 256 runs:
#    LayerNorm's fp32 parts four deep, the fused LayerNorm's bf16 parts three / four deep, LayerNorm bf16
#    1 × 4096 on 4 at 32768) and the forward's.
#    Prediction: all pass, 0 errors (the held forward ran 144 + 262 + 25 checked tests in run ZZZZZE, the
#    four-deep parts 28 + 28).
#  - `bash tools/runs/device_zzzzzf.sh grid` (~6 min): every family side by side, the fused LayerNorm's new
#    bench family included (session 25: `--family fused_layer_norm`, peers native and torch.compile;
#    its rows so far only in tools/tune.py sweeps). Prediction: the fused LayerNorm's backward 81-87 % bf16,
#    96-101 % fp32 (the sweeps), its forward 77-88 %; the other families as in run ZZZZZE `land2` ±2.5 %.
#  - `ab`, first call (session 26, ~2.5 min; its arm then timed every bf16 family at 16384×4096 /
#    4096×16384 / 2048×131072, base = this build without ab_words.patch, now
#    docs/experiments/backward-bf16-words.patch): bf16 rows read as 32-bit words in the backward's staged
#    tiles (each pair unpacked by one shift and one mask, where Triton's conversion spent a PRMT and a
#    shift on the high half). Count (tools/ptx_stats.py --sass, sm_90, row loop a thread): LayerNorm's 1 ×
#    2048 split parts 580 → 546 instructions, RMSNorm's 451 → 414, the fused add's 497 → 472, RMSNorm's 1 ×
#    4096 parts 703 → 632; whole staged rows −3 to −10 %; no spills, the same bar.sync. Prediction: the
#    split parts −2 to −6 % (if issue-bound), the whole rows of 4096 ±1 %.
#  - `ab` as it stands (~3 min): design change 32's backward half — LayerNorm's Σ(g·h) and Σg awaited in one
#    spin (stats._await_two_words), 2 rounds, base = main at e859d72 (ab_pair.patch: `git diff e859d72 --
#    normkit/kernels/stats.py`, made before the call, not kept). Prediction: LayerNorm bf16 4096×16384 /
#    8192×32768 −10 to −15 % (an L2 round trip a row block: RMSNorm, one word, runs the same bytes 22 µs
#    faster at 4096×16384), the fused LayerNorm alike, fp32 less, RMSNorm (the control) ±1 %.
#  - `fwdab` (~3.5 min): the forward half — the forward sends and awaits only its statistics (no zero Σ(g·h)
#    / Σg) and LayerNorm's two at once; one round, base = main at e859d72 (ab_fwd.patch: `git diff e859d72 --
#    normkit/`); then the split tests, forward first, in check mode. Prediction: the fused LayerNorm's
#    forward (four waits in a row → one) −10 % or more, the fused add (three → one) −2 to −5 %, the
#    reloading parts (RMSNorm / LayerNorm, polling) −1 to −3 %.
#  - `grid` as the last call (side_by_side 470: the device time left), on the build with both halves.
#  Outcome: `checks` (this session's first call, before the change): tests/test_split_rows.py 275 passed,
#    1 skipped (the unaligned staged forward case included); memcheck of the backward's split configurations
#    239 runs, 0 errors (cut at its 240 s limit inside the 31st of its configurations: LayerNorm's fp32 four
#    deep, the fused LayerNorm's bf16 parts, LayerNorm bf16 1 × 4096 on 4 among those run), the forward's 56
#    runs, 0 errors. `ab` (words): ±1 % everywhere (LayerNorm 4096×16384 130.9 / 129.5 → 129.7 / 129.6; the
#    fused LayerNorm 4096×16384 −2 %) — not issue-bound; and LayerNorm 2048×131072 faulted (illegal address:
#    the patch loads iteration 0's "previous" block at row −1), so its tests failed after it. Dropped.
#    `ab` (paired wait): LayerNorm bf16 4096×16384 130.8 / 130.3 → 117.5 / 117.6 µs, 8192×32768 489.0 /
#    490.0 → 443.0 / 443.2, 2048×131072 511.8 / 509.3 → 506.0 / 505.8; the fused LayerNorm 157.4 / 156.7 →
#    145.2 / 145.4, 582.1 / 581.5 → 528.3 / 526.6, 617.0 / 617.4 → 616.0 / 616.5; LayerNorm fp32 4096×16384
#    209.2 / 209.1 → 200.7 / 201.2, 4096×65536 811.2 / 814.8 → 761.3 / 762.8; RMSNorm 110.2 / 109.1 → 109.7
#    / 108.5; split backward tests 93 passed. `fwdab`: the fused LayerNorm bf16 4096×65536 662.7 → 549.4,
#    2048×131072 627.3 → 559.9; the fused add 550.5 → 540.6, 539.3 → 533.7, fp32 1071.9 → 1077.4;
#    LayerNorm 2048×131072 349.4 → 328.4; RMSNorm 2048×131072 301.4 → 291.7; LayerNorm's backward
#    4096×16384 118.3; split tests 155 passed, 0 failed, before the call's 130 s limit. `grid`: 315 s, copy
#    4221 GB/s (docs/bench_h200_run_zzzzzf.json; BENCHMARKS "Current numbers").
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?checks} in
checks)
  checked_tests 280 tests/test_split_rows.py
  memcheck_split bwd 240
  memcheck_split fwd 60 ;;
grid)
  side_by_side 540 ;;
ab)
  B=/tmp/ab/base
  patched_copy $B -R ab_pair.patch
  arm() {
    TUNE_LIMIT=70 tune_in "$1" --kind bwd --family layer_norm --dtype bf16 --heuristic-only \
        --shapes 4096x16384,8192x32768,2048x131072 | sed -E "s/ best .*//"
    TUNE_LIMIT=70 tune_in "$1" --kind bwd --family layer_norm --residual --dtype bf16 --heuristic-only \
        --shapes 4096x16384,8192x32768,2048x131072 | sed -E "s/ best .*//"
    TUNE_LIMIT=50 tune_in "$1" --kind bwd --family layer_norm --dtype fp32 --heuristic-only \
        --shapes 4096x16384,4096x65536 | sed -E "s/ best .*//"
    TUNE_LIMIT=30 tune_in "$1" --kind bwd --family rms --dtype bf16 --heuristic-only --shapes 4096x16384 \
        | sed -E "s/ best .*//"
  }
  ab_rounds 2 arm $B "$PWD" | tee "$L/ab.log"
  TESTS_LOG=split checked_tests 150 tests/test_split_rows.py -k "backward or per_head or bitwise" ;;
fwdab)
  B=/tmp/ab/base
  patched_copy $B -R ab_fwd.patch
  arm() {
    TUNE_LIMIT=50 tune_in "$1" --kind fwd --family fused_add --dtype bf16 --heuristic-only \
        --shapes 4096x65536,2048x131072 | sed -E "s/ best .*//"
    TUNE_LIMIT=40 tune_in "$1" --kind fwd --family fused_add --dtype fp32 --heuristic-only \
        --shapes 4096x65536 | sed -E "s/ best .*//"
    TUNE_LIMIT=50 tune_in "$1" --kind fwd --family layer_norm --residual --dtype bf16 --heuristic-only \
        --shapes 4096x65536,2048x131072 | sed -E "s/ best .*//"
    TUNE_LIMIT=50 tune_in "$1" --kind fwd --family layer_norm --dtype bf16 --heuristic-only \
        --shapes 2048x131072 | sed -E "s/ best .*//"
    TUNE_LIMIT=50 tune_in "$1" --kind fwd --family rms --dtype bf16 --heuristic-only \
        --shapes 2048x131072 | sed -E "s/ best .*//"
  }
  ab_rounds 1 arm $B "$PWD" | tee "$L/ab.log"
  TUNE_LIMIT=40 tune_in "$PWD" --kind bwd --family layer_norm --dtype bf16 --heuristic-only --shapes 4096x16384 \
      | sed -E "s/ best .*//"
  TESTS_LOG=split checked_tests 130 tests/test_split_rows.py -k "forward or backward_matches" ;;
esac
pack_logs
