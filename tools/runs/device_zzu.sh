#!/usr/bin/env bash
# Device run ZZU (session 14, nvidia-h200-x2, ~7 min): run ZZT's 4-byte split parts as the heuristic.
# Change (config.py _SPLIT_WIDE_ELEMENTS): the backward's 4- and 8-byte split rows take parts of 1
# row × 16 KB of x on 16 warps (fp32: 4096 columns), every family and every split width (8192 <
# N ≤ 16384 included, whose 2 × 4096 parts on 8 warps were not measured in fp32); the forward's
# 4-byte LayerNorm column tiles and fused-add parts by bytes (run ZZS's sweeps).
#  - GPU 0: A/B (2 rounds, main .ab_base against this build .ab_new), fp32, every family, 4096×16384,
#    8192×32768, 4096×65536.
#  - GPU 1: GPU tests in check mode: tests/test_split_rows.py, then every backward heuristic
#    configuration forced (run ZZT got through 17 of 33 before its limit).
# Prediction: fp32 backward 13-17 ms → 1.0-1.3 ms at 8192×32768 / 4096×65536 (ZZT's sweep);
# 4096×16384 ±10 % (unmeasured); forwards as run ZZS's sweeps (LayerNorm −2 %, the fused add −15 %).
# Outcome (run ZZU): A/B medians (µs), fp32 backward: RMSNorm 4096×16384 424 → 253, 8192×32768 13379 →
# 1009, 4096×65536 13600 → 980; the fused add 474 → 311, 16034 → 1245, 16486 → 1241; LayerNorm 3707 →
# 262, 16421 → 1088, 16722 → 1056. Forward: the fused add 4096×65536 1453 → 1253, LayerNorm 4096×65536
# 820 → 790; the unchanged shapes (rows ≤ 32768) moved −1.4 to +65.8 with base rounds 40-130 µs
# apart (8192×32768 fused add base 1386 / 1514, new 1514 / 1517: the same code). GPU tests (check
# mode): tests/test_split_rows.py 69 passed, 1 skipped; every backward configuration forced 34/34,
# 66 passed; 0 failed.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench_rounds 2 "$PWD/.ab_base" "$PWD/.ab_new" "_fp32|all|fp32|4096x16384,8192x32768,4096x65536"
  python3 tools/ab_summary.py "$L" > "$L/ab_summary.txt"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  checked_tests 150 tests/test_split_rows.py && mv "$L/tests.log" "$L/tests_split.log"
  checked_tests 330 tests/test_properties.py -k "gpu_heuristic_config and bwd"
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/ab_summary.txt" "$L/gpu1.log"
pack_logs
