#!/usr/bin/env bash
# Device run ZZS (session 14, nvidia-h200-x2, ~6 min): run ZZR's winners as heuristics, A/B'd and checked.
# Changes (config.py): LayerNorm's forward on rows > 32768 walks 1 × 8192 column tiles on 16 warps
# with the statistics pass staged 3 deep (_FWD_LAYER_NORM_COLUMNS; ZZR 4096×65536 441 → 384 µs,
# 2048×131072 498 → 403); the fused add's forward on rows > 32768 splits them (_FWD_SPLIT_RESIDUAL,
# 1 × 4096 parts, 8 warps, 4 an SM; ZZR 722 → 607, 819 → 613); LayerNorm's backward on rows > 16384
# takes the 2 × 4096 parts (_NARROW_SPLIT; ZZR 815 → 689, 821 → 720).
#  - GPU 0: A/B (3 rounds, main's build .ab_base against this one .ab_new): the changed shapes, bf16
#    and fp32, RMSNorm's as control; then sweeps: LayerNorm 8192×32768 forward on staged column tiles
#    (its whole row runs 342 µs = 74 %), fp32 wide rows of both families, RMSNorm's backward on
#    2 × 4096 parts.
#  - GPU 1: GPU tests in check mode (the split forward against float64, column stages bitwise, every
#    heuristic configuration forced), tensors above 2**31 elements (check_huge, the fused add added).
# Prediction: A/B as the sweeps (−13 to −25 %); fp32 the same direction, smaller; RMSNorm ±1 %.
# Outcome (run ZZS): A/B medians (µs): LayerNorm bf16 forward 4096×65536 434.5 → 385.6, 2048×131072
# 484.3 → 402.2; backward 805.5 → 685.7, 809.2 → 711.9, 8192×32768 804.5 → 631.8; the fused add forward
# 733.7 → 599.2, 755.1 → 609.8 (backward ±1.6); RMSNorm control −0.6 / −1.0. Found: fp32 backward rows
# of 65536 at 16.2-16.7 ms on main (the fused add 16188-16280, LayerNorm 16682-16701) — LayerNorm's 2 ×
# 4096 parts 1442-1453; fp32 forward LayerNorm +42 on the 8192-column staged tile (sweep: 4096
# columns 785.3 against 800.7 unstaged), the fused add's 2048-column parts 1203.4 against 1320.0
# for 4096 — so the forward's 4-byte tiles go by bytes (run ZZU). LayerNorm 8192×32768 forward:
# whole row 338.5 against 342.0 staged (kept). GPU tests (check mode, 240 s limit): 122 passed, 0
# failed (split forward against float64, column stages, every forward configuration 26/26; the
# backward configurations not reached: run ZZU). check_huge: 6/6 OK (bf16 65536×32769, fp32
# 33000×65536; RMSNorm, LayerNorm, the fused add — its forward split rows), peak 54.4 GiB.
source tools/device_env.sh
t() { timeout 120 python3 tools/tune.py "$@" 2>&1 | grep -E "each|heuristic|MISMATCH|Error"; }
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench_rounds 3 "$PWD/.ab_base" "$PWD/.ab_new" "_fam|layer_norm,fused_add|bf16|8192x32768,4096x65536,2048x131072" \
      "_fp32|layer_norm,fused_add|fp32|4096x65536" "_rms|rms|bf16|4096x65536"
  python3 tools/ab_summary.py "$L" > "$L/ab_summary.txt"
  echo "== sweeps"
  t --kind fwd --family layer_norm --shapes 8192x32768 --each --config 1x8192:16:col:s3 --config 1x4096:16:col:s3 \
      --config 1x8192:8:col:s3 --config 1x16384:32:col:s3
  t --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536 --each --config 1x16384:32:col \
      --config 1x4096:16:col:s3 --config 1x8192:32:col:s3
  t --kind fwd --family fused_add --dtype fp32 --shapes 4096x65536 --each --config 1x16384:32:col \
      --config 1x4096:8:split:p2 --config 1x4096:16:split:p2 --config 1x2048:8:split:p4
  t --kind bwd --family rms --shapes 4096x65536 --split only --ppsm 1
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  checked_tests 240 tests/test_split_rows.py tests/test_ops.py tests/test_properties.py \
      -k "split or column_stages or wide_rows or gpu_heuristic_config"
  timeout 150 python3 tools/check_huge.py > "$L/huge.log" 2>&1
  echo "huge (exit $?):"; tail -8 "$L/huge.log"
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/ab_summary.txt" "$L/gpu1.log"
pack_logs
