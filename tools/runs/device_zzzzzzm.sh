#!/usr/bin/env bash
# Device run ZZZZZZM (session 40, nvidia-h200, no carry needed):
#  Why: run ZZZZZZL `ab` kept the held rows of 32768 for a 4-byte residual only (a bf16 residual lost: the fused add
#  510 → 520 µs, the fused LayerNorm on 8 warps 557 → 646-651) and its `sweep` found, with an fp32 residual, the
#  fused add's and the fused LayerNorm's rows of 8192 faster held (−4 to −5 %) and the fused LayerNorm's rows of
#  16384 on 4 warps (−3 %). The working tree (config/forward.py: _FWD_HELD_4_BYTE_RESIDUAL,
#  _FWD_LAYER_NORM_4_BYTE_RESIDUAL_WARPS) holds them; HEAD is the working tree less
#  docs/experiments/fused-forward-held-4-byte-residual.patch.
#  - `ab` (~2 min, 2 rounds, HEAD → the tree): bf16 x with an fp32 residual, the fused add 8192×32768 / 16384×8192,
#    the fused LayerNorm 8192×32768 / 4096×16384 / 16384×8192. Prediction: −20 %, −4 %; −6 %, −3 %, −4 %.
#  - `sweep4096` (~1 min, the tree): every candidate for both fused forwards at 16384×4096 with an fp32 residual.
#  Outcome (session 41, run with ZZZZZZN's call; `sweep4096` not run): `ab`, µs, HEAD → the tree, rounds 1 / 2 — the
#  fused add 8192×32768 987.1 / 980.7 → 783.3 / 782.0 (−20 %, 78 → 97 % of copy), 16384×8192 411.2 / 409.1 → 392.5 /
#  392.2 (−4 %); the fused LayerNorm 8192×32768 871.5 / 870.5 → 822.8 / 824.9 (−5 %), 4096×16384 215.0 / 215.0 →
#  208.3 / 209.5 (−3 %), 16384×8192 404.8 / 405.1 → 393.7 / 395.2 (−2.6 %). As predicted (−20, −4; −6, −3, −4 %):
#  landed (config/forward.py _FWD_HELD_4_BYTE_RESIDUAL, _FWD_LAYER_NORM_4_BYTE_RESIDUAL_WARPS).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
P=/tmp/ab/head
wide_residual_arm() {
  heuristic_in "$1" 60 --kind fwd --family fused_add --dtype bf16 --residual-dtype fp32 --shapes 8192x32768,16384x8192
  heuristic_in "$1" 60 --kind fwd --family layer_norm --residual --dtype bf16 --residual-dtype fp32 \
      --shapes 8192x32768,4096x16384,16384x8192
}
for call in "${@:?ab|sweep4096 ...}"; do
case $call in
ab) [ -d $P ] || patched_copy $P -R docs/experiments/fused-forward-held-4-byte-residual.patch
  ab_rounds 2 wide_residual_arm $P "$PWD" | tee -a "$L/ab.log" ;;
sweep4096) for fam in fused_add "layer_norm --residual"; do
    TUNE_LIMIT=60 tune_in "$PWD" --kind fwd --family $fam --dtype bf16 --residual-dtype fp32 --shapes 16384x4096 \
        | sort -k4 -n | head -5 | tee -a "$L/sweep.log"
  done ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
