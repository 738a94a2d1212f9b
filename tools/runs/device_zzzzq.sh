#!/usr/bin/env bash
# Device run ZZZZQ (session 22, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzq.sh peers` (~4 min) —
# LayerNorm's wide rows after design changes 25-26 beside their peers (python -m normkit bench, the same
# run: normkit, native, torch.compile, Liger; forward and backward), and the heuristic's time where run
# ZZZZP's sweeps extended the split (fp32 2048×131072; bf16 x with a 4-byte y at 131072 / 262144).
# Prediction: LayerNorm forward bf16 2048×131072 ≈ 349 µs (72 % of copy), 1024×262144 ≈ 338 (75 %), fp32
# 4096×65536 ≈ 632 (80 %); the heuristic matches the sweeps' 606 / 462 / 445 (±2 %).
# Outcome: the heuristic fp32 2048×131072 606.0 µs (83 %), bf16 x / fp32 y 2048×131072 461.8 (82 %),
#   1024×262144 443.8 (85 %). Side by side (copy in the run; `docs/bench_h200_run_zzzzq.json`), forward µs
#   normkit / native / compile / Liger: bf16 4096×65536 352 / 484 / 522 / 2355 (72 %), fp32 629 / 940 /
#   1039 / 3094 (81 %), bf16 2048×131072 347 / 522 / 546 / fails (73 %), fp32 615 / 1094 / 1042 / fails
#   (83 %), bf16 1024×262144 343 / 662 / 540 / fails (74 %), fp32 801 / 947 / 1048 / fails (64 %: staged,
#   not split); backward 510-945, 64-86 %, 1.95× the best peer (geomean), forward 1.46×.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?peers} in
peers)
  { timeout 60 python3 tools/tune.py --kind fwd --family layer_norm --dtype fp32 --shapes 2048x131072 --each \
        --config 1x4096:16:col:s3 2>&1 | grep -E "heuristic|Error"
    timeout 60 python3 tools/tune.py --kind fwd --family layer_norm --dtype bf16 --out-dtype fp32 \
        --shapes 2048x131072,1024x262144 --each --config 1x8192:16:col:s3 2>&1 | grep -E "heuristic|Error"; } \
    | short_tiles | tee "$L/heuristic.log"
  timeout 250 python3 -m normkit bench --family layer_norm --shapes 4096x65536,2048x131072,1024x262144 \
      --dtypes bf16,fp32 --impls normkit,native,compile,liger --markdown --json "$OUT/bench_ln.json" 2>&1 \
      | tee "$L/bench_ln.log" | tail -40 ;;
esac
pack_logs
