#!/usr/bin/env bash
# Device run ZZZ (prepared in session 14 for the next session, nvidia-h200-x2, ~5 min):
# docs/experiments/forward-layer-norm-centered-pass.patch — LayerNorm's bf16 rows of 32768 / 65536 on
# column tiles read three times (per-lane Σh, then per-lane Σ(h − mean)², then y), as torch.compile's
# kernel (run ZZX). Its header holds the count and runs ZZY's sweep.
#  - GPU 0: A/B, 3 rounds, main (.ab_base) against main + the patch (/tmp/ab/centered): LayerNorm bf16
#    8192×32768, 4096×65536 (changed), 2048×131072 and 4096×16384 (controls), fp32 4096×65536 (control).
#  - GPU 1: the patch's GPU tests in check mode: its float64 test, every forward heuristic
#    configuration forced, tests/test_ops.py.
# Setup here: `rm -rf .ab_base && mkdir .ab_base && git archive HEAD normkit tools pyproject.toml | tar x
# -C .ab_base`; carry [".whl", ".ab_base"].
#    Then sweeps for fp32 rows the patch leaves alone: the fused add's forward at 8192×32768 (its
#    whole row re-read spills 80 B: 1386-1517 µs = 67-74 % in run ZZU) on split parts; LayerNorm's
#    forward at 8192×32768 / 4096×65536 on three-read column tiles.
# Prediction (run ZZY): 8192×32768 345 → 322-328 µs, 4096×65536 385 → 358; controls ±1 %; the fused
# add fp32 8192×32768 on 2048-column parts ~1250 µs (its 4096×65536: 1253).
# Outcome (session 15): A/B 8192×32768 342.3 → 317.4, 4096×65536 386.1 → 351.0 µs (met); controls
# −2.8 to +3.8. GPU tests: 4 failed — the test forced the centered tiles onto RMSNorm (refused by the
# launcher, as designed; fixed in the test). Sweeps: the fused add fp32 8192×32768 on 8 KB parts
# 1261.2 against the whole row's 1379.2 (16 KB 1418.0, 2 an SM 1764.0); LayerNorm fp32 on three-read
# tiles 614-1098 against 532.8 (whole row) / 793.9 (staged): refuted for fp32. One bench process
# (new, round 3) aborted at exit after writing its JSON (rc 134): RELIABILITY.md "Session 15".
source tools/device_env.sh
mkdir -p /tmp/ab/centered && cp -r normkit tools tests pyproject.toml /tmp/ab/centered/ && \
  (cd /tmp/ab/centered && patch -p1 -s < "$OLDPWD/docs/experiments/forward-layer-norm-centered-pass.patch") \
  || echo "patch failed"
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench_rounds 3 "$PWD/.ab_base" /tmp/ab/centered "_ln|layer_norm|bf16|8192x32768,4096x65536,2048x131072,4096x16384" \
      "_fp32|layer_norm|fp32|4096x65536"
  python3 tools/ab_summary.py "$L" | tee "$L/ab_summary.txt"
  echo "== sweeps (from the patched copy): fp32 rows the patch leaves alone"
  (cd /tmp/ab/centered && export PYTHONPATH=/tmp/site:$PWD
   timeout 100 python3 tools/tune.py --kind fwd --family fused_add --dtype fp32 --shapes 8192x32768 --each \
       --config 1x2048:8:split:p4 --config 1x4096:8:split:p4 --config 1x2048:8:split:p2 2>&1 | grep -E "each|Error"
   timeout 100 python3 tools/tune.py --kind fwd --family layer_norm --dtype fp32 --shapes 8192x32768,4096x65536 \
       --each --config 1x4096:16:col:two --config 1x8192:32:col:two:r32 --config 1x4096:8:col:two 2>&1 \
       | grep -E "each|Error")
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  cd /tmp/ab/centered && PYTHONPATH=/tmp/site:$PWD checked_tests 240 tests/test_ops.py tests/test_properties.py \
      -k "centered or wide_rows or reloads or gpu_heuristic_config and fwd"
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
