#!/usr/bin/env bash
# Device run ZZZZZZL (session 40, nvidia-h200, no carry needed):
#  Why: run ZZZZZZK `scanres` (tools/tune.py --residual-dtype fp32, every candidate, bf16 8192×32768, µs) found
#  the fused add's whole row re-read at 982.9 against 782.4 held (32 warps), the fused LayerNorm's held row on 32
#  warps at 872.6 against 822.3 on 8. docs/experiments/fused-forward-held-32768.patch: the fused forwards' 2-byte
#  rows of 32768 hold the row (the fused add on 32 warps; the fused LayerNorm on 8), whatever the residual's dtype.
#  - `ab` (~3 min, 2 rounds, HEAD → patch): the heuristic of the fused add and the fused LayerNorm, bf16 x with a
#    bf16 and with an fp32 residual, 8192×32768 and 2048×32768; fp16 with an fp32 residual. Prediction: fp32
#    residual −20 % (fused add) / −6 % (fused LayerNorm) as the sweep; bf16 residual not known (never swept at
#    32768): keep the rule where it is ≤ −1 %, else restrict it to a 4-byte residual.
#  - `sweep` (~2 min, HEAD): every candidate against the heuristic for the fused forwards with a bf16 residual at
#    8192×32768, and with an fp32 residual at 4096×16384 and 16384×8192 (rows not swept with it since run ZZZZN).
#    Prediction: the heuristic within 3 % but at 8192×32768.
#  Outcome (session 40, as run ZZZZZZM's header records it; not landed then): `ab` kept the held rows of 32768
#  for a 4-byte residual only (a bf16 residual lost: the fused add 510 → 520 µs, the fused LayerNorm on 8 warps
#  557 → 646-651); `sweep` found, with an fp32 residual, the fused add's and the fused LayerNorm's rows of 8192
#  faster held (−4 to −5 %) and the fused LayerNorm's rows of 16384 on 4 warps (−3 %).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
P=/tmp/ab/held
held_arm() {
  local fam res
  for fam in fused_add "layer_norm --residual"; do
    for res in bf16 fp32; do
      heuristic_in "$1" 60 --kind fwd --family $fam --dtype bf16 --residual-dtype $res --shapes 8192x32768,2048x32768
    done
  done
  heuristic_in "$1" 60 --kind fwd --family fused_add --dtype fp16 --residual-dtype fp32 --shapes 8192x32768
}
for call in "${@:?ab|sweep ...}"; do
case $call in
ab) [ -d $P ] || patched_copy $P docs/experiments/fused-forward-held-32768.patch
  ab_rounds 2 held_arm "$PWD" $P | tee -a "$L/ab.log" ;;
sweep) top() { sort -k4 -n | head -5; }
  for fam in fused_add "layer_norm --residual"; do
    TUNE_LIMIT=60 tune_in "$PWD" --kind fwd --family $fam --dtype bf16 --residual-dtype bf16 --shapes 8192x32768 \
        | top | tee -a "$L/sweep.log"
    for shape in 4096x16384 16384x8192; do
      TUNE_LIMIT=60 tune_in "$PWD" --kind fwd --family $fam --dtype bf16 --residual-dtype fp32 --shapes $shape \
          | top | tee -a "$L/sweep.log"
    done
  done ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
