#!/usr/bin/env bash
# Device run ZP (session 9, nvidia-h200): LayerNorm's forward with its registers capped at 32
# (TileConfig.max_registers → Triton's maxnreg). Run ZO (Nsight Compute): the 1 × 4096 tile takes
# 40 registers, 6 programs an SM (75 % theoretical occupancy, 67 % of DRAM bandwidth, 76.5 µs under
# the profiler) against RMSNorm's 32 registers, 8 programs, 79 %, 64.3 µs. Capped: 32 registers,
# 16 B spilled (ptxas here), 8 programs. Prediction: LayerNorm forward 16384×4096 70.8 → ≤ 68 µs;
# 16384×1024 (2 × 1024 on 4 warps, 40 → 32, no spill) −0.5-1 µs; every other row unchanged.
# A/B against HEAD's build (base_build/: mkdir base_build && git archive HEAD normkit pyproject.toml
# | tar x -C base_build), 3 rounds, LayerNorm bf16 at 16384×1024 / ×2048 / ×4096, fp32 ×4096.
# Outcome: bf16 16384×4096 70.7 → 69.7, ×1024 +1.0, fp32 ×4096 +9.0 (spills) — not landed; the
# candidate was TileConfig.max_registers passed as maxnreg, _FWD_LAYER_NORM 4096: (1, 8, 32) and
# 1024: (2, 4, 32) (BENCHMARKS.md "Session 9").
source tools/device_env.sh
ROOT=$PWD
ab_bench_rounds 3 $ROOT/base_build $ROOT "|layer_norm|bf16,fp32|16384x1024,16384x2048,16384x4096"
python3 tools/ab_summary.py $L | tee $L/ab_summary.txt
pack_logs
