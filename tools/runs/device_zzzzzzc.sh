#!/usr/bin/env bash
# Device run ZZZZZZC (session 37, nvidia-h200; no carry needed):
#  Why: run ZZZZZZB's A/B held LayerNorm's fp32 split parts' weight and bias in registers (−7.5 % at 4096×65536);
#  the tree now does it as a flag (TileConfig.hold_weight → HOLD_WEIGHT, LayerNorm's 4-byte x and y:
#  docs/experiments/split-forward-hold-weight.patch is the change, applied reversed for the base).
#  - `ab` (~3 min, 2 rounds, main → tree): LayerNorm fp32 4096×65536, 2048×131072, 1024×262144 (held),
#    fp32 x with a bf16 y 4096×65536 (not held: 12 B spilled; the tree's `:hold` config beside it), bf16
#    2048×131072 (the control, unchanged). Prediction: fp32 −5 to −9 %, the control ±1 %.
#  - `checks` (~4 min): check mode, the split forward's hold cases (test_split_rows config9-11, every family
#    and dtype), LayerNorm's heuristic forward for fp32 x, tests/test_ops.py's wide / split cases, memcheck of
#    the split forward's LayerNorm rows. Prediction: all pass.
#  - `y16` (~1 min, after the tree's rule took fp32 x with a 2-byte y too): that heuristic's time at
#    4096×65536, 2048×131072, 1024×262144 and its float64 checks. Prediction: 4096×65536 ~436 (the `:hold`
#    config of `ab`), all pass.
#  Outcome (session 37; `ab checks` 249 s, `y16` 21 s; in both `ab` arms the build is named "main": the tree's
#  lines are those with hold_weight=True; `ab` ran the change before fp32 x with a 2-byte y was taken, which the
#  patch now holds too): `ab` fp32 4096×65536 589.9 / 588.8 → 543.6 / 546.2, 2048×131072 587.9 / 585.8 → 547.6
#  / 540.6, 1024×262144 641.4 / 641.9 → 558.5 / 555.6 (−7 to −13 %); bf16 control 319.8 / 317.8 → 320.8 /
#  318.9; fp32 x, bf16 y (not yet held) 458.0 / 455.2 → 458.7 / 455.0, its `:hold` tile 435.6 / 437.2. `checks`:
#  36 passed, 8 passed, 7 passed, memcheck 56 runs 0 errors. `y16`: 437.6 / 426.9 / 435.1 µs, 4 passed. Inline
#  after it (`heuristic_in` on /tmp/ab/main and the tree, alternated twice, fp32 x with a bf16 y): 2048×131072
#  466.0 / 464.1 → 431.1 / 431.8, 1024×262144 509.9 / 512.9 → 435.5 / 435.1.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
B=/tmp/ab/main
hold_arm() {
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536,2048x131072,1024x262144
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype fp32 --out-dtype bf16 --shapes 4096x65536
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype bf16 --shapes 2048x131072
  [ "$1" = "$PWD" ] && tune_in "$1" --kind fwd --family layer_norm --dtype fp32 --out-dtype bf16 --shapes 4096x65536 \
      --config 1x4096:4:split:reload:p4:r128:hold | grep " each "
}
for call in "${@:?ab|checks ...}"; do
case $call in
ab) [ -d $B ] || patched_copy $B -R docs/experiments/split-forward-hold-weight.patch
  ab_rounds 2 hold_arm $B "$PWD" | tee -a "$L/ab.log" ;;
checks) T=tests/test_split_rows.py::test_layer_norm_forward_heuristic_matches_float64_for_each_y
  TESTS_LOG=hold checked_tests 200 tests/test_split_rows.py -k "test_split_forward_matches_float64 and (config9 or config10 or config11)"
  TESTS_LOG=heur checked_tests 120 $(for y in float32 bfloat16; do for n in 40000 65536 100000 200000; do
      echo "$T[torch.float32-torch.$y-None-$n]"; done; done)
  TESTS_LOG=ops checked_tests 120 tests/test_ops.py -k "wide or split"
  memcheck_split fwd 100 ;;
y16) T=tests/test_split_rows.py::test_layer_norm_forward_heuristic_matches_float64_for_each_y
  heuristic_in "$PWD" 60 --kind fwd --family layer_norm --dtype fp32 --out-dtype bf16 \
      --shapes 4096x65536,2048x131072,1024x262144 | tee -a "$L/y16.log"
  TESTS_LOG=y16 checked_tests 120 $(for n in 40000 65536 100000 200000; do echo "$T[torch.float32-torch.bfloat16-None-$n]"; done) ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
