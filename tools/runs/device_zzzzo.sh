#!/usr/bin/env bash
# Device run ZZZZO (session 22, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzo.sh lab` (~8 min):
#  - LayerNorm's forward in 16 KB split parts on 4 warps capped at 128 registers (4 an SM fit; uncapped
#    135 registers let 3: run ZZZZN's sweep 1024×262144 338.9 µs against the staged tiles' 401.4,
#    2048×131072 411.5 against 382.8; Nsight Compute at 2048×131072: the parts read the minimum 541 MB
#    but at 17.7 % achieved occupancy, long-scoreboard stalls 2.6 of 6.0 cycles an issue, DRAM 54 %).
#    Count: 3 → 4 parts an SM is 12 → 16 warps, 33 % more bytes in flight.
#    Prediction: 2048×131072 −5 to −12 % against uncapped (≈ 365-390: a tie with the staged tiles at
#    best), 1024×262144 −3 to −8 %; fp32 4096×65536 (1 × 4096 parts) ±10 % against the staged 785.
#  - A/B main → docs/experiments/forward-lanes-xy.patch (forward-lanes-widest.patch with the whole-row
#    and column tiles' runs set by x and y only; the split parts' by all four): run ZZZZN's ymix found
#    the widest patch −2 to −15 % on 10 of 12 mixed-dtype forwards but +8 % on the fused add's fp32
#    residual beside bf16 x and y at 4096×16384 (whole row re-read: 216.3 against 199.6).
#    Prediction: that row back to main's (±1 %), the others as in ymix (the split parts and the 4-byte-y
#    tiles unchanged from the widest patch).
#  - check-mode GPU forward tests in the patched build (every forward heuristic configuration, the
#    split parts with each y, the public API's mixed dtypes).
# Outcome: LayerNorm (µs, the heuristic first): bf16 2048×131072 384.5 staged, 402.6 uncapped, **348.4
#   capped** (−9.4 %: the prediction's edge); 1024×262144 401.9, 337.6 uncapped, 339.4 capped (a tie:
#   the 262144-column grid is not register-bound); bf16 4096×65536 350.7 (three-read tiles) against
#   349.1 capped (a tie, not taken); fp32 4096×65536 762.7 staged against **638.6** capped, 639.1
#   uncapped, 728.2 on 8 warps (−16 %, past the ±10 % predicted). A/B main → forward-lanes-xy.patch
#   (2 rounds): the fp32 residual's 4096×16384 198.2 → 198.3 (main's, as predicted), 16384×4096 ±0.1,
#   4096×65536 1061.8 → 968.4; RMSNorm → fp32 y 4096×16384 100.2 → 99.7, 2048×131072 486.2 → 451.2;
#   LayerNorm → fp32 y 4096×16384 110.9 → 99.1, 2048×131072 645.1 → 550.2; the control ±0.1. Check-mode
#   tests in the patched build: 83 passed, 0 failed, 32/32 forward configurations. → design changes 25
#   (config/forward.py _FWD_SPLIT_LAYER_NORM) and 26 (kernels/forward.py _lanes, this patch).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?lab} in
lab)
  { tune_sweep fwd layer_norm bf16 2048x131072,1024x262144 60 1x8192:4:split:p4 1x8192:4:split:p4:r128
    tune_sweep fwd layer_norm bf16 4096x65536 40 1x8192:4:split:p4:r128
    tune_sweep fwd layer_norm fp32 4096x65536 60 1x4096:4:split:p4:r128 1x4096:8:split:p4 1x4096:4:split:p4; } \
    | tee "$L/lnsweep.log"
  N=/tmp/ab/new
  patched_copy $N docs/experiments/forward-lanes-xy.patch
  for round in 1 2; do
    for dir in "$PWD" "$N"; do
      fwd_heuristic_in "$dir" --family fused_add --dtype bf16 --residual-dtype fp32 --shapes 16384x4096,4096x16384,4096x65536 \
          --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family rms --dtype bf16 --out-dtype fp32 --shapes 4096x16384,2048x131072 --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family layer_norm --dtype bf16 --out-dtype fp32 --shapes 4096x16384,2048x131072 --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family rms --dtype bf16 --shapes 4096x65536 --config 1x16384:32:col  # same dtype: control
    done
  done | tee "$L/ab.log"
  (cd $N && PYTHONPATH=/tmp/site:$N L=$L TESTS_LOG=tests_patched checked_tests 200 tests/test_properties.py \
      tests/test_split_rows.py -k "(gpu_heuristic_config and fwd) or for_each_y or public_api") ;;
esac
pack_logs
