#!/usr/bin/env bash
# Device run ZZZZZZO (session 41, nvidia-h200, no carry needed):
#  Why: LayerNorm's bf16 split forward (1 × 8192 parts on 4 warps, four an SM, 128-register cap) stays at 79-81 % of
#  copy. Run ZZZZZZB put the gap in its L2 traffic from the weight and bias, read again every row block (without
#  them: 279 µs against 318 at 2048×131072), which its 2-byte parts cannot hold in registers (sessions 37-39: spills,
#  three an SM). A part of 2 rows × 4096 columns holds as many values of x a thread as 1 × 8192 but reads each column
#  of w and b once for two rows: half their L2 bytes (1.30 → ~1.0 GB at 2048×131072), for twice the parts a row in
#  the exchange (32 at 131072: 64 words a part's wait). tools/tune.py's forward sweep never generates split
#  candidates, and no sweep on record named a forward part of more than one row.
#  - `rows2` (~3 min, tools/tune.py --config, the heuristic in the same process): LayerNorm bf16 2048×131072,
#    4096×65536, 1024×262144 with parts 2 × 4096 on 4 (four an SM, capped 128; three), 2 × 4096 on 8 (two an SM),
#    2 × 2048 on 4 (four an SM), 4 × 2048 on 4 (capped 128); fp32 4096×65536 with 2 × 2048 on 4 holding w and b.
#    Prediction: 2 × 4096 on 4 at 2048×131072 321 → 300-310 µs (half the weight's L2 traffic, one more exchange
#    word a part), the others within ±5 %; fp32 ±3 % (its parts hold w and b already).
#  - `shifted`: run ZZZZZZK `ab` (docs/experiments/split-forward-shifted-stats.patch; its session 40 outcome was
#    not recorded).
#  Outcome (session 41; µs, tools/tune.py in one process): both predictions failed. `rows2` — bf16 2048×131072 324.0
#  (the heuristic's 1 × 8192) against 2 × 4096 on 4 capped 331.7, on 4 three an SM 362.8, on 8 two an SM 468.5,
#  2 × 2048 on 4 434.7, 4 × 2048 capped 366.5; 4096×65536 316.4 against 319.5 (2 × 4096 capped) and 361.0-427.7;
#  1024×262144 323.5 against 335.1 and 379.4-478.7; fp32 4096×65536 546.4 against 2 × 2048 holding w and b 571.9,
#  not holding 603.5. Half the weight's and bias' L2 reads a row did not pay for twice the parts in the exchange.
#  `shifted` (ZZZZZZK's `ab`, HEAD → the patch, rounds 1 / 2): bf16 4096×65536 314.8 / 318.3 → 420.3 / 418.6,
#  2048×131072 322.2 / 318.8 → 424.1 / 425.2, 1024×262144 327.2 / 327.1 → 434.5 / 436.0 (+32 %), fp32 4096×65536
#  547.3 / 544.6 → 788.2 / 786.8 (+44 %): the pair reduction (tl.reduce of a tuple with a custom combine) costs
#  far more than its three barriers saved — as run ZZZZZZN's chunked tree (+39 %). Not landed.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
for call in "${@:?rows2|shifted ...}"; do
case $call in
rows2) s() { tune_sweep fwd "$@" | tee -a "$L/rows2.log"; }
  s layer_norm bf16 2048x131072,4096x65536,1024x262144 150 2x4096:4:split:reload:p4:r128 \
      2x4096:4:split:reload:p3 2x4096:8:split:reload:p2 2x2048:4:split:reload:p4 4x2048:4:split:reload:p4:r128
  s layer_norm fp32 4096x65536 60 2x2048:4:split:reload:p4:r128:hold 2x2048:4:split:reload:p4:r128 ;;
shifted) P=/tmp/ab/shifted; [ -d $P ] || patched_copy $P docs/experiments/split-forward-shifted-stats.patch
  arm() {
    heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype bf16 --shapes 4096x65536,2048x131072,1024x262144
    heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536
  }
  ab_rounds 2 arm "$PWD" $P | tee -a "$L/shifted.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
