#!/usr/bin/env bash
# Device run ZZZZZZN (session 41, nvidia-h200, no carry needed):
#  Why: LayerNorm's forward lags RMSNorm's on rows of 16384-65536 (BENCHMARKS "Current numbers": bf16 4096×16384 90 %
#  against 93 %, 8192×32768 83 % against 99 % — torch.compile 89 % there —, 4096×65536 80 % against 98 %). RMSNorm's
#  tile there is the whole row re-read for y (reload): one block reduction, nothing of the row live across it, 32
#  registers, two programs an SM. LayerNorm's two-pass statistics hold the row across the mean's reduction (1 × 32768
#  on 32: 64 registers, one an SM, 345 µs), so it walks three-read column tiles instead. The new CHUNK_STATS
#  (TileConfig.chunk_stats, tools/tune.py `:chunk`) loads the row as 16-byte chunks, takes each chunk's exact
#  two-pass (mean, M2) in the thread's registers and merges the chunks with Chan's formula in ONE reduction tree
#  (stats.chunk_stats; shifted by the row's first value, float32 errors as the two-pass's: CPU check), then re-reads
#  the row for y (docs/experiments/forward-chunk-stats.patch, with its tests). ptxas (sm_90, tools/ptx_stats.py --flags RELOAD=1,CHUNK_STATS=1), bf16: 1 × 32768 on 32 warps
#  64 → 50 registers, bar.sync 5 → 2 (cap 32: 76 B spilled); 1 × 16384 on 16 63 → 50 (two an SM), on 32: 32;
#  1 × 8192 on 8 64 → 48 (four → five an SM); 1 × 65536 on 32 spills 152 B.
#  - `chunk` (~3 min, tools/tune.py --config, the heuristic in the same process): LayerNorm bf16 16384×4096,
#    16384×8192, 4096×16384, 8192×32768, 4096×65536; fp32 16384×4096, 4096×16384; the fused LayerNorm bf16 16384×4096,
#    4096×16384, 8192×32768. Prediction: 8192×32768 305 → 265-280 µs (RMSNorm's whole row re-read: 257), 4096×16384
#    70.5 → 67-69, 16384×8192 ±2 %, 4096×65536 slower (spills), the fused LayerNorm ±3 %.
#  - `splitchunk` (~2 min, docs/experiments/split-forward-chunk-stats.patch on top of it): the same statistics in LayerNorm's split
#    forward parts (a part's (mean, M2) from its chunks in one tree, shifted by its first column; ptxas: bar.sync
#    6 → 3, 0 B spilled at the 128 cap, but the row loop 1174 → 1632 instructions: Chan's merge of 8 chunks a
#    thread), tools/tune.py in the patched build: bf16 4096×65536, 2048×131072, 1024×262144, fp32 4096×65536.
#    Prediction: ±3 % (fewer barriers, more instructions: ZZZZZZJ put the gap in instructions).
#  Then, in the same call: run ZZZZZZK `ab` (its outcome was not recorded in session 40) and run ZZZZZZM `ab`.
#  Outcome (session 41, tools/tune.py in one process, µs, heuristic → chunk_stats): the prediction failed. bf16
#  8192×32768 308.9 → 319.1 on 32 warps (50 registers: one program an SM; capped at 32, 76 B spilled: 379.5; 16 warps
#  386.7), 4096×16384 70.5 → 73.8 (16 warps; 32 warps 88.5), 4096×65536 316.2 → 408.2 (spills), 16384×4096 66.4 →
#  67.0 (4 warps), 16384×8192 131.5 → 129.6 (−1.4 %); fp32 16384×4096 131.5 → 128.8 (1 × 4096 on 8), 4096×16384
#  132.4 → 131.0; the fused LayerNorm 16384×4096 130.1 → 129.9, 4096×16384 133.9 → 145.3, 8192×32768 557.6 → 550.3.
#  Wins of 1-2 % inside the run spread, losses where it was to gain: RMSNorm's 32768 tile wins on two programs an SM
#  (32 registers), which Chan's tree does not fit. Split parts (`splitchunk`): bf16 4096×65536 321.7 → 446.6,
#  2048×131072 321.4 → 447.6, 1024×262144 327.7 → 460.7, fp32 4096×65536 543.0 → 862.9 — +39 % at bf16 for +39 %
#  row-loop instructions (1174 → 1632): adding instructions costs LayerNorm's split parts in proportion, where
#  removing 12-15 % moved them ±1 % (session 30's diet). Not landed; both patches kept.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
for call in "${@:?chunk|splitchunk ...}"; do
case $call in
chunk) P=/tmp/ab/chunk; [ -d $P ] || patched_copy $P docs/experiments/forward-chunk-stats.patch
  ( cd $P && export PYTHONPATH=/tmp/site:$P && s() { tune_sweep fwd "$@" | tee -a "$L/chunk.log"; }
  s layer_norm bf16 16384x4096 60 1x4096:8:reload:chunk 1x4096:4:reload:chunk 2x4096:8:reload:chunk
  s layer_norm bf16 16384x8192 60 1x8192:8:reload:chunk 1x8192:16:reload:chunk 1x8192:4:reload:chunk
  s layer_norm bf16 4096x16384 60 1x16384:16:reload:chunk 1x16384:32:reload:chunk 1x16384:16:reload:chunk:r32
  s layer_norm bf16 8192x32768 60 1x32768:32:reload:chunk 1x32768:32:reload:chunk:r32 1x32768:16:reload:chunk
  s layer_norm bf16 4096x65536 60 1x65536:32:reload:chunk
  s layer_norm fp32 16384x4096 60 2x4096:16:reload:chunk 1x4096:8:reload:chunk 1x4096:16:reload:chunk
  s layer_norm fp32 4096x16384 60 1x16384:16:reload:chunk 1x16384:32:reload:chunk
  TUNE_ARGS=--residual s layer_norm bf16 16384x4096 60 1x4096:8:reload:chunk 1x4096:16:reload:chunk
  TUNE_ARGS=--residual s layer_norm bf16 4096x16384 60 1x16384:16:reload:chunk 1x16384:32:reload:chunk
  TUNE_ARGS=--residual s layer_norm bf16 8192x32768 60 1x32768:32:reload:chunk ) ;;
splitchunk) P=/tmp/ab/splitchunk
  [ -d $P ] || patched_copy $P docs/experiments/forward-chunk-stats.patch docs/experiments/split-forward-chunk-stats.patch
  ( cd $P && export PYTHONPATH=/tmp/site:$P && s() { tune_sweep fwd "$@" | tee -a "$L/splitchunk.log"; }
    s layer_norm bf16 4096x65536,2048x131072,1024x262144 90 1x8192:4:split:reload:p4:r128:chunk
    s layer_norm fp32 4096x65536 60 1x4096:4:split:reload:p4:r128:hold:chunk ) ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
