#!/usr/bin/env bash
# Device run ZZW (session 14, nvidia-h200-x2, ~4 min): per-lane statistics in the forward's column
# tiles. Found in run ZZT's side by side: torch.compile's LayerNorm forward at 8192×32768 277 µs
# (91 %) against normkit's whole row 346 (73 %); Inductor's looped reductions keep Welford
# accumulators per lane and reduce across lanes once a row (tools/inductor_code.py, session 13),
# where normkit's column tiles reduce every tile across the block (LayerNorm: two dependent block
# reductions a tile, Chan's merge; RMSNorm one). The change (.ab_new, kernels/stats.py
# accumulate_lane_stats / finish_lane_stats): a tile costs its loads and 2-4 FMAs a value; one
# merge a row. Counted: LayerNorm 1 × 8192 on 16 warps holds 2 × 16 accumulators a thread.
#  - GPU 0 and GPU 1: the same sweeps (tools/tune.py --config) from main's build (.ab_base) and
#    this one (.ab_new), in opposite orders: LayerNorm 8192×32768 … 2048×131072, RMSNorm 4096×65536 /
#    2048×131072 (column tiles); then (GPU 1) the forced forward column-tile configurations of the
#    new build against float64 (check mode).
# Prediction: LayerNorm's column tiles −10 to −20 % (toward RMSNorm's 307 µs at 4096×65536), and at
# 8192×32768 column tiles beating the whole row (toward torch.compile's 277); RMSNorm ±3 %.
# Outcome (run ZZW): refuted — no gain. LayerNorm 4096×65536 1 × 8192 / 16 warps / 3 stages: new
# 382.7-382.8 against base 384.7-384.9; 2048×131072 407.3-408.4 against 396.0-396.2; unstaged 439.6
# against 415.0; 8192×32768 342.8 against 344.2 staged (the whole row: 342.6 / 341.8); RMSNorm's column
# tiles 318.0-320.5 against 310.9 (4096×65536), 381.9-388.7 against 376.4 (2048×131072). The per-tile
# block reductions are not what holds the column tiles. Not landed: docs/experiments/forward-lane-stats.patch.
# (The GPU tests after the sweeps ran out of their 100 s.)
source tools/device_env.sh
sweeps() {  # DIR: the sweeps from that build's directory
  (cd "$1" && export PYTHONPATH=/tmp/site:$PWD
   tt() { timeout 90 python3 tools/tune.py "$@" 2>&1 | grep -E "each|MISMATCH|Error"; }
   tt --kind fwd --family layer_norm --shapes 4096x65536,2048x131072 --each --config 1x8192:16:col:s3 \
       --config 1x8192:16:col --config 1x16384:32:col --config 1x4096:16:col:s3
   tt --kind fwd --family layer_norm --shapes 8192x32768 --each --config 1x8192:16:col:s3 \
       --config 1x8192:16:col --config 1x4096:16:col:s3 --config 1x16384:32:col
   tt --kind fwd --family rms --shapes 4096x65536,2048x131072 --each --config 1x8192:16:col:s3 --config 1x8192:16:col)
}
(
  export CUDA_VISIBLE_DEVICES=0
  echo "== base"; sweeps "$PWD/.ab_base"; echo "== new"; sweeps "$PWD/.ab_new"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  echo "== new"; sweeps "$PWD/.ab_new"; echo "== base"; sweeps "$PWD/.ab_base"
  (cd .ab_new && PYTHONPATH=/tmp/site:$PWD checked_tests 100 tests/test_properties.py -k "gpu_heuristic_config and fwd and col")
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
