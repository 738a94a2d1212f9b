#!/usr/bin/env bash
# Device run ZZZZZZG (session 38, nvidia-h200; no carry needed; needs ab-head.patch at the root: `git diff HEAD --
# normkit > ab-head.patch`, the session's uncommitted kernel and config change, reversed here for the A/B's base):
#  Why: run ZZZZZZE's sweep (the held 2-byte weight converted at its use, convert.upcast_held; session 38, this
#  session, first call) ran RMSNorm bf16's heuristic parts (1 × 8192 on 4, four an SM, reload) holding their weight
#  2048×131072 283.1 → 271.2 µs, 1024×262144 281.9 → 273.0 (−3 to −4 %); LayerNorm bf16's held parts (1 × 8192 on
#  4 capped 168, three an SM) only −1 to −2 % (318.4 → 314.8, 319.4 → 313.4, 313.1 → 309.3). The tree holds
#  RMSNorm's 2-byte parts' weight (config/forward.py _FWD_SPLIT_HOLD_WEIGHT), fp16 by the same non-pure asm
#  (two cvt.f32.f16; ptxas, sm_90: bf16 126 registers, fp16 119 — four an SM — against 127 / 96 not held).
#  - `ab` (~2 min, 2 rounds, HEAD → tree): the heuristic of RMSNorm bf16 and fp16 2048×131072 / 1024×262144, LayerNorm
#    fp32 4096×65536 with an fp32 and a bf16 y (their held loads now in x's tile layout), LayerNorm bf16 2048×131072
#    (the control: unchanged PTX). Prediction: RMSNorm −3 to −4 % (bf16 as the sweep; fp16 the same bytes), the rest ±1 %.
#  - `y32` (~1 min, the tree): RMSNorm bf16 x with an fp32 y (1 × 4096 parts on 4) held, against the heuristic,
#    2048×131072 and 4096×65536; the fused add's and the fused LayerNorm's staged parts holding their weight
#    (run ZZZZZZE's `fused`). Prediction: y32 −1 to −3 % (the weight is 1/6 of its L2 reads), fused ±2 %.
#  - `checks` (~5 min, the tree): tests/test_split_rows.py's forward cases (held parts, every heuristic's y,
#    bf16 / fp16 / fp32), tests/test_ops.py's wide and split cases, memcheck of the split forward.
#  Outcome (session 38): `ab` µs r1 / r2, HEAD → tree: RMSNorm bf16 2048×131072 282.2 / 282.8 → 273.8 / 273.5, 1024×262144
#  280.4 / 281.2 → 272.6 / 272.3 (−3 %, as predicted); fp16 313.5 / 308.7 → 271.0 / 271.8, 314.8 / 315.4 → 272.9 /
#  270.8 (−13 %: above the prediction — fp16's parts had been 10 % behind bf16's); LayerNorm fp32 545.0 / 545.4 →
#  546.8 / 546.4, with a bf16 y 439.4 / 441.4 → 437.2 / 438.5, the control 318.9 / 322.9 → 320.6 / 321.9 (±1 %).
#  `y32` heuristic → held: 2048×131072 430.6 → 419.7, 4096×65536 422.5 → 418.7 (one sample: not landed); fused
#  add 541.4 → 530.7, 534.4 → 538.4; fused LayerNorm 549.2 → 561.9, 552.6 → 543.0 (±2 %: not landed).
#  `checks`: test_split_rows -k forward 221 passed, test_ops wide/split 7 passed, memcheck 56 runs 0 errors.
#  Landed: design change 41.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
B=/tmp/ab/head
hold2_arm() {
  for d in bf16 fp16; do heuristic_in "$1" 60 --kind fwd --family rms --dtype $d --shapes 2048x131072,1024x262144; done
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype fp32 --out-dtype bf16 --shapes 4096x65536
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype bf16 --shapes 2048x131072
}
for call in "${@:?ab|y32|checks ...}"; do
case $call in
ab) [ -d $B ] || patched_copy $B -R ab-head.patch
  ab_rounds 2 hold2_arm $B "$PWD" | tee -a "$L/ab.log" ;;
y32) TUNE_LIMIT=120 tune_in "$PWD" --kind fwd --family rms --dtype bf16 --out-dtype fp32 --shapes 2048x131072,4096x65536 \
      --config 1x4096:4:split:reload:p4:hold | tee -a "$L/y32.log"
  for fam in "fused_add" "layer_norm --residual"; do
    TUNE_LIMIT=120 tune_in "$PWD" --kind fwd --family $fam --dtype bf16 --shapes 4096x65536,2048x131072 \
        --config 1x2048:4:split:a3:p8:hold | tee -a "$L/fused.log"
  done ;;
checks) forward_split_checks ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
