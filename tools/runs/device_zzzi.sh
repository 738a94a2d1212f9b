#!/usr/bin/env bash
# Device run ZZZI (session 16, nvidia-h200-x2, ~8 min; carry [".whl"]): checks and numbers after
# design change 14 (run ZZZH's A/B: 4-byte backward split parts on two programs an SM, LayerNorm's
# bf16 rows of 32768 on capped 8-warp parts).
#  - GPU 0: GPU tests, launcher in check mode (every split backward configuration forced onto small
#    problems against float64, split rows, 20-run bitwise: run ZZZH's 200 s ran out at 59 passed);
#    then compute-sanitizer memcheck over every split backward configuration (ZZZH's ran out at 37 ok).
#  - GPU 1: sweeps of the forward's split rows (kernels/forward.py _split_rows, the fused add's since
#    run ZZR) for RMSNorm / LayerNorm without a residual on the widest rows, where the column tiles
#    reach 62-70 % (fp32 4096×65536 RMSNorm 733 µs, LayerNorm 824; bf16 2048×131072 373 / 398): run
#    ZZR measured them at bf16 4096×65536 only (375 / 523 against 309 / 444); then the side-by-side
#    grid (BENCHMARKS "Current numbers").
# Count: RMSNorm fp32 4096×65536 forward moves 2 × 1 GiB = 2.15 GB → 511 µs at 4206 GB/s.
# Prediction: the split forward at fp32 4096×65536 near the fused add's 82 % (RMSNorm ~620 µs, LayerNorm
# ~640: it merges local means and M2, no extra pass); bf16 2048×131072 within ±10 % of the column tiles.
# Outcome: tests 88 passed, 1 skipped, 0 failed (8 split backward configurations); memcheck 96 runs,
# 0 errors. Split forward: RMSNorm fp32 4096×65536 670.1 (1 × 2048 on 4 warps, 4 an SM) against 735.1,
# 2048×131072 715.6 (1 × 4096 on 8, 2 an SM) against 797.0 — design change 15, run ZZZJ; LayerNorm fp32
# 795.8-1094.4 against 787.9 / 805.4, bf16 2048×131072 RMSNorm 398-415 against 374, LayerNorm 523-535
# against 400: refuted. Side by side: docs/bench_h200_run_zzzi.json ("Current numbers").
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  checked_tests 320 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "gpu_heuristic_config and bwd and split or test_split_rows or bitwise"
  memcheck_split bwd 200
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  fwd_sweep() { tune_sweep fwd "$1" "$2" "$3" 70 "${@:4}"; }  # family dtype shapes configs...
  for family in rms layer_norm; do
    fwd_sweep $family fp32 4096x65536,2048x131072 1x2048:8:split:p4 1x4096:8:split:p2 1x2048:4:split:p4
    fwd_sweep $family bf16 2048x131072 1x4096:8:split:p4 1x8192:8:split:p2
  done
  side_by_side 300
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
