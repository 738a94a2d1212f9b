#!/usr/bin/env bash
# Device run ZZZZZQ (session 31, nvidia-h200; carry [".whl"] for `grid`):
#  Why: run ZZZZZP `finisher` (tools/time_finisher.py, RMSNorm bf16, graph-timed, µs): the backward with
#  dweight against none — 4096×16384 108.8 / 103.9, 8192×32768 409.3 / 402.7, 2048×131072 434.9 / 422.2,
#  16384×4096 99.7 / 96.3 — and the finisher alone 2.26 (G = 66, 128 × 16 on 2 warps), 2.65 (G = 33),
#  6.03 (G = 8: 8 × 16 on 1 warp, 8192 programs of 128 values), 1.88 (G = 132). The split parts' few
#  groups make the finisher's 16-column strips tiny. The tree (config.finish_config by G and N;
#  docs/experiments/finisher-wide-strips.patch, reversed, is the build before it) gives a program at
#  least 2048 values: 8 × 256, 16 × 128, 33 → 64 × 32, on 2 warps; G ≥ 128 unchanged.
#  - `sweep` (~2 min): the finisher alone on (G, N, K) partial buffers the heuristics make, every
#    one- or two-step tile (tools/time_finisher.py --partials). Prediction: G = 8 at 131072 6.0 → ≤ 2.5 µs,
#    G = 16 at 65536 and G = 33 at 32768 −0.5 to −2 µs, the new rule within 0.3 µs of the best; G ≥ 128 as is.
#  - `ab` (~3 min a round, AB_ROUNDS (2) rounds, tools/tune.py --heuristic-only, the tree against the build before it):
#    prediction: RMSNorm / LayerNorm bf16 2048×131072 −3 to −5 µs (−1 %), 4096×65536 −1 to −3, 8192×32768
#    −0.5 to −1.5, 4096×16384 ±0.3 (G = 66: the same tile); 16384×4096 (G = 132, same tile) unchanged.
#  - `checks` (~2 min): the finisher's GPU tests in check mode (tests/test_properties.py -k finisher,
#    tests/test_launch.py -k dependent, tests/test_split_rows.py -k bwd).
#  - `grid` (~7 min): the side-by-side grid (BENCHMARKS "Current numbers").
#  - `statab` (~6 min, 2 rounds; added after `ab`): the staged split parts' saved rstd / mean read in inline
#    PTX (stats.load_row_stat) instead of a tl.load that the pipeliner staged through shared memory behind
#    a bar.sync of its own each row block — run ZZZZZP's source counters put 15 % (RMSNorm 2048×131072) and
#    9 % (LayerNorm 4096×16384) of all warp samples on the instruction after that barrier, the largest
#    barrier stall. docs/experiments/split-stats-unstaged.patch, reversed, is the build before it. ptxas
#    (sm_90): one bar.sync fewer a row block, RMSNorm 1 × 2048 123 → 128 registers (cap 128), 1 × 4096 227 →
#    248; LayerNorm 1 × 4096 255 → 246, but its capped 1 × 2048 (rows of 16384) 0 → 24 B spilled. Prediction:
#    RMSNorm −1 to −3 % where the barrier stall was largest (2048×131072), LayerNorm 32768-131072 −1 to −2 %,
#    LayerNorm 4096×16384 ±0 or slower (the spill).
#  Outcome (four calls: `sweep ab checks` with AB_ROUNDS=1 and the first rule, 2048 values a program;
#  `ab widegrid` with AB_SMALL=1 and the rule at 4096 values; `statab checks`; `rmsgrid`):
#  - `sweep` (µs, the finisher alone; old tile → 2048 values on 2 warps → 4096 on 2 → best of the sweep):
#    8×131072 5.95 → 1.87 → 2.02 → 1.76 (8 × 1024 on 8); with dbias 10.96 → 2.33 → 2.39 → 2.23; 16×65536 3.55
#    → 2.20 → 1.97 → 1.91, with dbias 6.12 → 3.13 → 2.35 → 2.29; 33×32768 2.64 → 2.23 → 2.21 (the best), 3.86
#    → 3.09 → 2.97 (the best); 66×16384 2.26 → 2.26 → 2.19 (the best), 3.29 → 3.29 → 2.90 (the best); 8×65536
#    3.53 → 1.66 → 1.91 → 1.49; 4×262144 1.96 → 1.96 → 1.63; 132×4096 1.84 (the old tile, the best);
#    264×2048×2 2.35 (best 2.29). Prediction met (G = 8 ≤ 2.5; the rule within 0.4 µs of the best everywhere).
#  - `ab` (2 rounds, the 4096-value rule, µs, before → tree): RMSNorm bf16 4096×16384 107.9 / 108.5 → 108.5 /
#    108.2 (G = 66, ±0), 8192×32768 407.9 / 407.9 → 408.8 / 408.5, 4096×65536 413.7 / 415.5 → 413.3 / 413.8,
#    2048×131072 425.9 / 429.1 → 423.9 / 424.9 (−1 %); LayerNorm bf16 4096×16384 114.0 / 114.0 → 114.7 / 113.7,
#    8192×32768 427.2 / 426.1 → 425.2 / 424.7, 4096×65536 439.5 / 438.4 → 433.5 / 432.6 (−1.3 %), 2048×131072
#    439.8 / 440.8 → 433.9 / 434.3 (−1.4 %); the fused add 2048×131072 510.6 / 511.9 → 506.2 / 505.0 (−1.1 %);
#    controls RMSNorm 16384×4096 100.4 / 99.9 → 99.9 / 99.5 (G = 132: the same tile), LayerNorm 16384×1024
#    28.7 / 28.5 → 28.5 / 28.7, but 4096×2048 17.2 / 17.2 → 17.4 / 17.4 (fewer finisher programs on a narrow
#    row): the landed rule keeps the old strips below 256 strips a row (N < 8192), where this A/B's wide
#    shapes take the same tiles as measured. Round 1 of the first rule (2048 values): LayerNorm 2048×131072
#    447.8 → 437.6, RMSNorm 430.7 → 426.8. Inside the prediction but LayerNorm 65536 / 131072 (−6 µs: the
#    dbias finisher, which the prediction left out).
#  - `widegrid` (copy 4224 GB/s, $OUT/bench_wide.json → docs/bench_h200_run_zzzzzq_wide.json): BENCHMARKS
#    "Current numbers", session 31's wide rows.
#  - `checks` (check mode): after `sweep` 7 passed (finisher, dependent launch) and 93 passed
#    (test_split_rows' split backward, per head, bitwise); after `statab` (both patches, LayerNorm's too) 11,
#    93 and test_ops' backward 59 passed.
#  - `statab` (2 rounds, µs, staged → load_row_stat): RMSNorm bf16 4096×16384 110.0 / 109.2 → 108.5 / 108.1
#    (−1.3 %), 8192×32768 410.4 / 411.9 → 408.7 / 407.2, 4096×65536 419.6 / 417.8 → 415.3 / 413.2 (−1.1 %),
#    2048×131072 430.4 / 430.2 → 428.8 / 427.5 (−0.5 %); the fused add 4096×16384 131.7 / 131.7 → 131.1 / 131.3;
#    LayerNorm LOST: 4096×16384 114.2 / 114.4 → 132.1 / 133.4 (+16 %, its capped part spilling 24 B),
#    8192×32768 430.1 / 431.2 → 459.5 / 464.2 (+7 %), 2048×131072 439.7 / 441.2 → 464.5 / 463.4 (+5 %, no spill
#    there: 255 → 246 registers). RMSNorm inside its prediction (not at the top of it); LayerNorm's far
#    outside, unexplained (two loads held across the spin where one was; not profiled). Landed for RMSNorm's
#    (and the fused add's) parts only; LayerNorm's: docs/experiments/split-layer-norm-stats-unstaged.patch.
#  - `rmsgrid` (copy 4213 GB/s, docs/bench_h200_run_zzzzzq_rms.json): RMSNorm bf16 backward 107 / 408 / 412 /
#    426 µs (88.9 / 93.7 / 92.9 / 89.6 %) at 4096×16384 / 8192×32768 / 4096×65536 / 2048×131072.
#  - `memcheck` (on the landed tree, run as one command line): 22 runs ok, 0 failed, no memcheck report
#    before the 120 s limit (exit 124).
#  The A/B arms' patches (docs/experiments/finisher-wide-strips.patch, split-stats-unstaged.patch: the
#  tree's diffs, applied reversed) were removed when the changes landed; `git show` of design change 37's and
#  38's commits gives them back.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
B=/tmp/ab/before
for call in "${@:?sweep|ab|checks|grid|statab|rmsgrid|widegrid|memcheck ...}"; do
case $call in
sweep)
  timeout 240 python3 tools/time_finisher.py --json "$L/finisher_sweep.json" --partials \
      4x262144,8x131072,16x65536,33x32768,66x16384,8x131072x2,16x65536x2,33x32768x2,66x16384x2,8x65536,132x4096,264x2048x2 \
      2>&1 | tee "$L/finisher_sweep.log" ;;
ab)
  [ -d $B ] || patched_copy $B -R docs/experiments/finisher-wide-strips.patch
  arm() {
    heuristic_in "$1" 70 --kind bwd --family rms --dtype bf16 --shapes 4096x16384,8192x32768,4096x65536,2048x131072,16384x4096
    heuristic_in "$1" 70 --kind bwd --family layer_norm --dtype bf16 --shapes 4096x16384,8192x32768,4096x65536,2048x131072
    heuristic_in "$1" 40 --kind bwd --family fused_add --dtype bf16 --shapes 2048x131072
    [ -n "${AB_SMALL:-}" ] && heuristic_in "$1" 40 --kind bwd --family layer_norm --dtype bf16 --shapes 4096x2048,16384x1024
  }
  ab_rounds "${AB_ROUNDS:-2}" arm $B "$PWD" | tee -a "$L/ab.log" ;;
checks)
  TESTS_LOG=finisher checked_tests 150 tests/test_properties.py tests/test_ops.py -k "finisher or partials" \
      tests/test_launch.py::test_dependent_launch_changes_no_bit
  TESTS_LOG=split checked_tests 150 tests/test_split_rows.py -k "split_backward or per_head or bitwise"
  TESTS_LOG=ops checked_tests 120 tests/test_ops.py -k "backward or bwd or wide or split" ;;
grid) side_by_side 420 ;;
statab)
  S=/tmp/ab/staged_stats
  [ -d $S ] || patched_copy $S -R docs/experiments/split-stats-unstaged.patch
  arm() {
    heuristic_in "$1" 70 --kind bwd --family rms --dtype bf16 --shapes 4096x16384,8192x32768,4096x65536,2048x131072
    heuristic_in "$1" 60 --kind bwd --family layer_norm --dtype bf16 --shapes 4096x16384,8192x32768,2048x131072
    heuristic_in "$1" 40 --kind bwd --family fused_add --dtype bf16 --shapes 4096x16384
  }
  ab_rounds "${AB_ROUNDS:-2}" arm $S "$PWD" | tee -a "$L/statab.log" ;;
rmsgrid)  # after `statab`: RMSNorm and the fused add (load_row_stat: RMSNorm's parts only) against their peers
  timeout 300 python3 -m normkit bench --family rms,fused_add --impls normkit,native,compile,liger --markdown --dtypes bf16 \
      --shapes 4096x16384,8192x32768,4096x65536,2048x131072 --json "$OUT/bench_rms.json" > "$OUT/bench_rms.log" 2>&1
  echo "bench rc=$?"; grep -E "^\| bf16" "$OUT/bench_rms.log" | head -16 ;;
memcheck)  # after landing: compute-sanitizer over RMSNorm's / the fused add's split backward (load_row_stat)
  san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 "$san" --tool memcheck --target-processes all \
      python3 tools/sanitize_sweep.py --kind bwd --split only --families rms,fused_add > "$L/memcheck.log" 2>&1
  echo "exit $?: $(grep -c ': ok (' "$L/memcheck.log") ok, $(grep -c FAIL "$L/memcheck.log") failed;" \
       "$(grep -E 'ERROR SUMMARY' "$L/memcheck.log" | sort | uniq -c | tr '\n' ' ')" ;;
widegrid)  # the wide rows alone, every family against its peers (the rows the finisher's tiles change)
  timeout 400 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown --dtypes bf16 \
      --shapes 4096x16384,8192x32768,4096x65536,2048x131072 --json "$OUT/bench_wide.json" > "$OUT/bench_wide.log" 2>&1
  echo "bench rc=$?" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
