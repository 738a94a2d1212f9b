#!/usr/bin/env bash
# Device run ZZB (session 11, nvidia-h200-x2, the session's last device seconds): LayerNorm bf16
# 16384×2048 side by side (not among the family's default shapes, so run ZZA's table lacks it),
# twice on each GPU, each call with its own copy-bandwidth measurement.
# Prediction (run ZZ's A/B 53.6 µs; run ZX's sweep 52.7 at 4149 GB/s): backward ≥ 90 % of copy.
# Outcome: copy 4225-4231 GB/s; LayerNorm bf16 backward 16384×2048 52.8 µs on all four calls (90 %
# of copy: 201.3 MB in 52.8 µs = 3813 GB/s against 4230), torch.compile 89.7-91.5, Liger 162-166;
# forward 35.1-35.2 (90 %; compile 46.7, Liger 39.9-40.8).
source tools/device_env.sh
for gpu in 0 1; do
  (
    export CUDA_VISIBLE_DEVICES=$gpu
    for k in 1 2; do
      timeout 70 python3 -m normkit bench --family layer_norm --dtypes bf16 --shapes 16384x2048 \
          --impls normkit,compile,liger --json $L/ln2048_gpu${gpu}_$k.json > $L/ln2048_gpu${gpu}_$k.log 2>&1
      echo "gpu $gpu call $k rc=$?: $(grep -o 'copy bandwidth [0-9]* GB/s' $L/ln2048_gpu${gpu}_$k.log | head -1)"
      grep -E "^bf16 16384×2048" $L/ln2048_gpu${gpu}_$k.log
    done
  ) &
done
wait
pack_logs
