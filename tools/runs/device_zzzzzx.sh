#!/usr/bin/env bash
# Device run ZZZZZX (prepared in session 35 for the next session, nvidia-h200; no carry needed):
#  Why: design change 39 (session 35) stages the recomputing backward's 2-byte split parts — picked from
#  sweeps of forced tiles (run ZZZZZW `stagedrec`), not yet timed as the heuristic — and leaves the
#  recomputing fp32 parts and the fused LayerNorm's recomputing parts prefetching: never measured staged
#  (their saved-statistics parts stage: _STAGED_4_BYTE*, _STAGED_LAYER_NORM_RESIDUAL).
#  - `heur` (~2.5 min): tools/runs/device_zzzzzw.sh heur — the heuristic's times at the swept shapes and
#    tests/test_split_rows.py -k recompute in check mode. Prediction: the sweeps' times (RMSNorm bf16
#    4096×16384 ~113 µs, 2048×131072 ~452; LayerNorm ~128 / ~519; the fused add ~133 / ~526), all ok.
#  - `fp32rec` (~1.5 min): the recomputing backward's fp32 rows, staged candidates (the saved statistics'
#    staged parts: 1 × 1024 on 4 four an SM, 1 × 2048 on 8 two an SM, 1 × 2048 on 4 three an SM four deep)
#    against the prefetching heuristic, one process: RMSNorm, LayerNorm, the fused add at 4096×16384,
#    4096×65536, 2048×131072. Prediction: staged 5-20 % faster (the 2-byte parts gained 9-33 %).
#  - `fusedlnrec` (~1 min): the fused LayerNorm's (layer_norm --residual) recomputing bf16 parts, staged
#    candidates (1 × 2048 on 4 capped four an SM three and four deep, 1 × 4096 on 4 two an SM, 1 × 8192 on 8)
#    at 4096×16384, 4096×65536, 2048×131072, 1024×262144. Prediction: staged 10-30 % faster.
#  Land a table entry where a candidate wins by > 3 % (then `heur`-style timing of the new heuristic).
#  Outcome: (not yet run)
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
for call in "${@:?heur|fp32rec|fusedlnrec ...}"; do
case $call in
heur) mkdir -p "$OUT/heur" && OUT=$OUT/heur bash tools/runs/device_zzzzzw.sh heur ;;  # its logs: $OUT/heur/logs.tgz
fp32rec) for family in rms layer_norm fused_add; do
    TUNE_LIMIT=90 tune_in "$PWD" --kind bwd --recompute --family $family --dtype fp32 \
      --shapes 4096x16384,4096x65536,2048x131072 \
      $(printf -- "--config 1x%s " 1024:4:split:a3:p4 2048:8:split:a3:p2 2048:4:split:a4:p3)
  done | tee -a "$L/fp32rec.log" ;;
fusedlnrec) TUNE_LIMIT=100 tune_in "$PWD" --kind bwd --recompute --family layer_norm --residual --dtype bf16 \
    --shapes 4096x16384,4096x65536,2048x131072,1024x262144 \
    $(printf -- "--config 1x%s " 2048:4:split:a3:p4:r128 2048:4:split:a4:p4:r128 4096:4:split:a3:p2 8192:8:split:a3) \
    | tee -a "$L/fusedlnrec.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
