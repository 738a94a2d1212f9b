#!/usr/bin/env bash
# Device run ZZZZZY (session 36, nvidia-h200; no carry needed):
#  Why: run ZZZZZX's sweeps landed staged parts for the recomputing backward's fp32 rows (every family in
#  _STAGED_4_BYTE_LAYER_NORM: 1 × 2048 on 4, three an SM, four deep) and the fused LayerNorm's bf16 rows
#  (_STAGED_LAYER_NORM_RECOMPUTE, as LayerNorm's) — picked from forced tiles; the fp32 widths 32768 and 262144
#  and the fused LayerNorm's fp32 rows were not swept.
#  - `heur` (~3 min): tools/tune.py --each, the new heuristic against the old prefetching parts forced in one
#    process (1 × 2048 on 4 two an SM prefetching, and three an SM with reload), the recomputing backward fp32:
#    RMSNorm, LayerNorm, the fused add, the fused LayerNorm at 4096×16384, 4096×32768, 4096×65536,
#    2048×131072, 1024×262144; the fused LayerNorm bf16 heuristic alone at the same shapes; then
#    tests/test_split_rows.py -k recompute in check mode. Prediction: the sweeps' times where swept (RMSNorm
#    fp32 ~202 / ~759 / ~766, the fused LayerNorm bf16 ~146 / ~569 / ~581 / ~613 µs), the heuristic ≥ 3 % faster
#    than both prefetching tiles at 32768 and 262144 and on the fused LayerNorm fp32 (its saved-statistics parts
#    stage alike); tests all pass.
#  Outcome (session 36; µs, the heuristic / 1 × 2048 two an SM prefetching / three an SM reloading, one process):
#  - RMSNorm fp32 198.2 / 216.7 / 221.2, 384.3 / 433.5 / 446.0, 756.6 / 864.6 / 884.5, 766.8 / 922.4 / 910.2,
#    776.6 / 951.5 / 929.6 (98-102 % of copy); the fused add 256.2 / 299.8 / 279.3, 505.2 / 601.7 / 553.1,
#    998.3 / 1199.5 / 1099.5, 984.9 / 1272.0 / 1140.5, 970.0 / 1308.9 / 1155.3 (99-105 %); the fused LayerNorm
#    fp32 275.1 / 312.0 / 318.5, 551.6 / 631.1 / 647.3, 1083.5 / 1251.5 / 1300.1, 1197.8 / 1444.7 / 1489.8,
#    1410.0 / 1473.2 / 1539.1 — all as predicted; LayerNorm fp32 226.4 / 227.3 / 229.3, 458.9 / 463.9 / 463.9,
#    923.4 / 935.5 / 931.6 (ties), 1086.1 / 1074.7 / 1148.2, and 1140.0 / 1172.6 / 1022.1 at 1024×262144: 11.5 %
#    slower than the reloading parts — outside the prediction; that width kept prefetching.
#  - the fused LayerNorm bf16: 145.6 / 283.4 / 574.7 / 589.6 / 619.3 (82-90 %, was 59-72 %), as predicted.
#  - test_split_rows -k recompute: 42 passed.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
for call in "${@:?heur ...}"; do
case $call in
heur) for family in rms layer_norm fused_add "layer_norm --residual"; do
    TUNE_LIMIT=120 tune_in "$PWD" --kind bwd --recompute --family $family --dtype fp32 \
      --shapes 4096x16384,4096x32768,4096x65536,2048x131072,1024x262144 \
      --config 1x2048:4:split:pf:p2 --config 1x2048:4:split:pf:p3:reload
  done | tee -a "$L/heur.log"
  heuristic_in "$PWD" 90 --kind bwd --recompute --family layer_norm --residual --dtype bf16 \
      --shapes 4096x16384,4096x32768,4096x65536,2048x131072,1024x262144 | tee -a "$L/heur.log"
  TESTS_LOG=recompute checked_tests 150 tests/test_split_rows.py -k recompute ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
