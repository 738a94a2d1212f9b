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
#  Outcome (session 36, 2026-12-02; µs, H200):
#  - `heur`: as predicted — RMSNorm bf16 112.8 / 217.6 / 436.3 / 447.8 / 465.9 (4096×16384 … 1024×262144,
#    83-89 % of copy), LayerNorm 126.6 / 244.2 / 498.7 / 518.8 / 551.6 (69-77 %), the fused add 133.8 / 258.9 /
#    515.9 / 524.8 / 537.7 (94-98 %); test_split_rows -k recompute 42 passed.
#  - `fp32rec` (heuristic's prefetching parts / best staged): 1 × 2048 on 4, three an SM, four deep won —
#    RMSNorm 214.7 / 202.3, 855.4 / 758.9, 908.5 / 765.7; the fused add 285.6 / 255.7, 1120.8 / 1009.6,
#    1138.4 / 986.8 (1 × 1024 four an SM: 253.6, 1008.9, 1010.1); LayerNorm 226.5 / 224.0, 917.9 / 916.8,
#    1141.0 / 1070.4. Inside the prediction (5-20 %) for RMSNorm and the fused add; LayerNorm 0-6 %.
#  - `fusedlnrec`: the fused LayerNorm bf16's prefetching 2 × 2048 179.4 / 845.3 / 822.5 / 868.6 against 1 × 4096
#    on 4, two an SM 145.9 / 569.0 / 580.9 (1 × 8192 on 8 at 1024×262144: 613.0): 19-33 %, above the prediction.
#  Landed: the recomputing backward's 4-byte parts and the fused LayerNorm's bf16 parts staged (config/backward.py);
#  their widths not swept here timed in run ZZZZZY.
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
