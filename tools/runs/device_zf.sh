#!/usr/bin/env bash
# Device run ZF (planned for session 8, nvidia-h200-x2): A/B of docs/experiments/joined-row-sums.patch
# (branch exp/joined-row-sums where the repository keeps it): the backward's whole-row path sums
# g·h and g in one reduction tree (tl.join → tl.sum → tl.split). Count (ptxas, sm_90, compiled on
# the CPU with the launch's specialisation — divisible pointers, unit column stride): per row block
# 10 → 7 bar.sync for LayerNorm bf16 2 × 4096 on 16 warps, 8 → 5 for RMSNorm, 6 → 3 for LayerNorm
# fp32 (4 → 0 B spilled), 10 → 7 at 2 × 2048 and 4 × 1024; no new spills.
# Prediction: LayerNorm bf16 16384×4096 −1-2 µs (108 → ≤ 106.5, ≥ 90 % of copy), RMSNorm
# 16384×1024 / ×2048 −1-3 %, LayerNorm fp32 −1-2 µs; ≥ 16384×8192 unchanged.
# GPU 0: main's build (the working tree) and the patched copy alternated three times, each run
# from its own directory (`python3 -m normkit` imports the working directory's copy; printed).
# GPU 1: the patched copy's GPU test files (its own tests/ and tools/ copies), then memcheck over
# both families' backward configurations (the first with the dependent launch).
source tools/device_env.sh
ROOT=$PWD EXP=/tmp/exp
rm -rf $EXP && mkdir -p $EXP && cp -r normkit tests tools pyproject.toml $EXP/
(cd $EXP && patch -p1 < $ROOT/docs/experiments/joined-row-sums.patch) || { echo "patch failed"; exit 1; }
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench 3 16384x1024,16384x2048,4096x2048,16384x4096,16384x8192 $ROOT $EXP
) &
(
  export CUDA_VISIBLE_DEVICES=1
  cd $EXP && OUT=$L TESTS_LIMIT=280 PYTHONPATH=/tmp/site:$EXP bash tools/device_reliability.sh gpu_tests
  # the dependent launch (sm_90+) under memcheck: every backward configuration of both families
  FAMILIES=rms,layer_norm WIDTHS=lo MEMCHECK_LIMIT=100 OUT=$L PYTHONPATH=/tmp/site:$EXP \
    bash tools/device_reliability.sh memcheck_bwd
) &
wait
python3 tools/ab_summary.py $L | tee $L/ab_summary.txt
pack_logs
