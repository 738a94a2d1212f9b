#!/usr/bin/env bash
# Device run ZZZA (session 15, nvidia-h200-x2, ~6 min). Setup here: `.ab_base` = main at 1ebb0ba
# (`rm -rf .ab_base && mkdir .ab_base && git archive HEAD normkit tools pyproject.toml | tar x -C
# .ab_base`); carry [".whl", ".ab_base"]. The working tree = main + the centered-pass patch (run
# ZZZ's A/B: LayerNorm bf16 8192×32768 342.3 → 317.4, 4096×65536 386.1 → 351.0), now without a
# residual only, + the fused add's split forward for rows of more than 64 KB (fp32 32768).
#  - GPU 0: A/B, 3 rounds: the fused add fp32 8192×32768 (changed), fp32 4096×65536 and bf16
#    8192×32768 (controls), LayerNorm bf16 8192×32768 (changed, repeat); then the side-by-side grid.
#  - GPU 1: GPU tests in check mode (run ZZZ's 4 failures were the test forcing the centered tiles
#    on RMSNorm; it now runs them on LayerNorm): every forward heuristic configuration, the split
#    forward against float64, tests/test_ops.py, tests/test_features.py; then run ZZZ's exit abort
#    ("terminate called without an active exception", rc 134, once in 12 bench processes, after the
#    JSON was written): 8 bench processes of the new build, 4 of the base, rc counted.
# Count: the fused add fp32 8192×32768 moves x, residual in and y, residual_out out: 4 × 1 GiB =
# 4.29 GB → 1015 µs at run ZZT's 4232 GB/s copy.
# Prediction: 1379 → ~1260 µs (74 → 80 %, run ZZZ's sweep); controls ±1 %; LayerNorm −7 %.
# Outcome: the fused add fp32 8192×32768 1406.9 → 1329.1 µs (−5.5 %, 76 %: half the predicted gain);
# controls bf16 8192×32768 +2.7, fp32 4096×65536 +59.4 (both builds bimodal, ~1190 / ~1250);
# LayerNorm 8192×32768 339.7 → 313.3. Tests: 156 passed, cut at 260 s inside test_split_rows.py (the
# rest ran in a call of its own: forward configurations 30/30, split rows 69 passed, 0 failed). Exit
# abort: 12 × rc 0, not reproduced. Side by side: BENCHMARKS.md "Current numbers" (copy 4206 GB/s).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  ab_summarised 3 "$PWD/.ab_base" "$PWD" "_fa|fused_add|fp32|8192x32768,4096x65536" \
      "_fabf|fused_add|bf16|8192x32768" "_ln|layer_norm|bf16|8192x32768"
  side_by_side 330
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  checked_tests 260 tests/test_ops.py tests/test_features.py tests/test_split_rows.py tests/test_properties.py \
      -k "not test_properties or gpu_heuristic_config and fwd"
  for build in new new new new new new new new base base base base; do
    dir=$PWD; [ $build = base ] && dir=$PWD/.ab_base
    (cd "$dir" && PYTHONPATH=/tmp/site timeout 60 python3 -m normkit bench --family layer_norm --impls normkit \
        --dtypes bf16 --shapes 8192x32768,4096x65536 > "$L/exit_$build.log" 2>&1; echo "exit $build rc=$?")
  done
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
