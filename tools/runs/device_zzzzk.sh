#!/usr/bin/env bash
# Device run ZZZZK (session 20, nvidia-h200; carry [".whl"]), after run ZZZZJ's `l2` and `snake`:
#  - `bash tools/runs/device_zzzzk.sh fwd` (~4 min): A/B main (43b2a3c: this checkout with
#    docs/experiments/forward-snake-whole-row.patch taken back out) → this checkout: the forward's
#    two-pass column tiles walk the output pass backwards (the snake, the three-read tiles left in tile
#    order), and RMSNorm's 2-byte rows of 65536 whole on 32 warps re-read for y; then the forward's tiles
#    one an SM at the widest rows, snaked.
#  - `bash tools/runs/device_zzzzk.sh tests` (~3 min): the check-mode GPU tests of the forward (every
#    heuristic configuration against float64, the wide rows, bitwise) on this checkout.
# Count (ZZZZJ `l2`, Nsight Compute, bf16, DRAM read against the minimum M·N·2 = 537 MB): RMSNorm
# 2048×131072 column tiles 949 MB (1.77×), 1 × 32768 tiles one an SM 945; 4096×65536 657 MB (1.22×,
# 303 µs), the whole row re-read one an SM 538 (1.00×, 256 µs); LayerNorm 2048×131072 1.08 GB (2.0×).
# ZZZZJ `snake` (A/B, 2 rounds, fwd µs): RMSNorm 4096×65536 308 → 293, 2048×131072 374 → 339,
# 1024×262144 397 → 374; LayerNorm 2048×131072 397 → 386, fp32 4096×65536 781 → 761, but its
# three-read tiles 8192×32768 317 → 363 and 4096×65536 353 → 361 (hence left in tile order).
# Prediction (fwd): RMSNorm bf16 4096×65536 308 → 255-262 (the whole row), fp16 the same;
# 2048×131072 → ~339, 1024×262144 → ~374; LayerNorm 2048×131072 −2 to −3 %, fp32 4096×65536 −2.5 %;
# LayerNorm 8192×32768 / 4096×65536 (three reads, unchanged) ±1 %; RMSNorm fp32 4096×65536 (split)
# ±1 %; backward unchanged (the forward only). Tiles one an SM snaked: 1 × 65536 columns at 131072
# −3 to −8 % (two tiles a row: the second re-read straight away), ±3 % at 262144.
# Outcome (session 20): fwd — RMSNorm bf16 4096×65536 307.7 → 256.6, 2048×65536 153.7 → 133.6, fp16
# 290.2 → 255.7, 2048×131072 372.8 → 348.7, 1024×262144 397.3 → 382.3; LayerNorm 2048×131072 −9.7,
# 1024×262144 −10.6, fp32 4096×65536 −21.3; but the three-read tiles 317 → 356 / 352 → 378 (their loop
# counted tiles: the cause); sweep — 1 × 32768 / 1 × 65536 snaked tiles 351.8 / 359.1 against the 1 ×
# 16384's 350.2 at 131072, 381.5 / 378.2 against 381.8 at 262144 (not taken). fwd2 — the three-read
# tiles back to base (322 / 322), RMSNorm's snake counted by columns 7-9 % slower than none: the landed
# form keeps each loop as measured best. grid — check-mode forward tests 90 passed; the grid →
# docs/bench_h200_run_zzzzk.json, BENCHMARKS "Current numbers" (RMSNorm 4096×65536 forward 260 µs = 98 %).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?fwd, fwd2, grid or tests} in
grid)
  # main with the snake (tile-counted, two-read tiles only) and RMSNorm's whole rows of 65536: the
  # forward's check-mode GPU tests, then the side-by-side grid (→ docs/bench_h200_run_zzzzk.json)
  checked_tests 140 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "(gpu_heuristic_config and fwd) or (test_split_rows and fwd) or (bitwise and fwd) or nonfinite"
  side_by_side 440; tail -5 "$OUT/bench.log" ;;
fwd2)
  # the three-read tiles back on the column-counted loop, the snake on it too: A/B against main again
  B=/tmp/ab/base
  mkdir -p $B && cp -r normkit tools tests pyproject.toml $B/ && (cd $B && patch -R -p1 -s < "$OLDPWD/docs/experiments/forward-snake-whole-row.patch") \
      || echo "base copy failed"
  ( export L=$L/ab; mkdir -p "$L"
    ab_summarised 2 "$B" "$PWD" "_r|rms,layer_norm|bf16|8192x32768,4096x65536,2048x131072,1024x262144" )
  checked_tests 200 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "(gpu_heuristic_config and fwd) or (test_split_rows and fwd) or (bitwise and fwd) or nonfinite" ;;
fwd)
  B=/tmp/ab/base
  mkdir -p $B && cp -r normkit tools tests pyproject.toml $B/ && (cd $B && patch -R -p1 -s < "$OLDPWD/docs/experiments/forward-snake-whole-row.patch") \
      || echo "base copy failed"
  ( export L=$L/ab; mkdir -p "$L"
    ab_summarised 2 "$B" "$PWD" "_r|rms,layer_norm|bf16|4096x65536,2048x131072,1024x262144" \
        "_c|rms,layer_norm|bf16|8192x32768,2048x65536" "_h|rms|fp16|4096x65536" "_f|rms,layer_norm|fp32|4096x65536" )
  tune_sweep fwd rms bf16 2048x131072,1024x262144 60 1x32768:32:col 1x65536:32:col
  tune_sweep fwd layer_norm bf16 2048x131072,1024x262144 60 1x16384:32:col 1x32768:32:col 1x16384:16:col
  tune_sweep fwd layer_norm bf16 4096x65536 60 1x65536:32:reload 1x32768:32:col 1x16384:16:col:s3 ;;
tests)
  checked_tests 240 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "(gpu_heuristic_config and fwd) or (test_split_rows and fwd) or (bitwise and fwd) or nonfinite" ;;
esac
pack_logs
