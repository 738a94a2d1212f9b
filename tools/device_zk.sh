#!/usr/bin/env bash
# Device run ZK (planned for session 9, nvidia-h200-x2; not run yet).
# GPU 0 — A/B against HEAD's build (base_build/: mkdir base_build && git archive HEAD normkit
#   pyproject.toml | tar x -C base_build, with the candidate change applied to the working tree):
#   the candidate of the session (e.g. the 2 × 1024 on 4 warps, 4/SM tile for RMSNorm and LayerNorm,
#   run ZG's sweep: RMSNorm 16384×1024 29.7 against 30.4; or a LayerNorm-only 1 × 4096 joined tile
#   at N = 4096: 105.5 against 106.2), 3 rounds; then the split rows at 8192 < N ≤ 16384 on more
#   rows (8192×16384, 16384×12288) against session 8's sweep shape 4096×16384.
# GPU 1 — memcheck over the split configurations, the new 2 × 4096 parts included (run ZJ had no
#   time left for it), every family (racecheck serialises blocks, which split rows cannot run).
source tools/device_env.sh
L=$OUT/logs; mkdir -p $L
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench 3 16384x1024,16384x4096,8192x16384,16384x12288 $ROOT/base_build $ROOT
  python3 tools/ab_summary.py $L | tee $L/ab_summary.txt
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT=$L SWEEP_LIMIT=120 bash tools/device_reliability.sh sweep
  OUT=$L FAMILIES=rms,fused_add,layer_norm MEMCHECK_SPLIT_LIMIT=150 bash tools/device_reliability.sh memcheck_split
) &
wait
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
