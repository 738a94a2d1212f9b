#!/usr/bin/env bash
# Device run ZZZZW (session 23, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzw.sh go` (~5 min):
#  - hold: LayerNorm's backward split parts holding the previous row block upcast (fp32 h and dy:
#    docs/experiments/backward-hold-fp32.patch: kernels/backward.py HOLD_FP32, default off, applied to
#    the copy when the tree lacks it; the copy turns it on) instead of the bf16 loads converted
#    again after the exchange. A/B in one process per build (tools/tune.py --kind bwd --config, µs): main
#    against a copy with HOLD_FP32 on, 2 rounds, LayerNorm bf16 4096×16384 / 4096×65536 / 2048×131072,
#    2 × 2048 and 1 × 2048 parts on 4 warps with and without prefetch.
#    Count (tools/ptx_stats.py --sass, sm_90, bf16 N = 16384): 2 × 2048 prefetched 1016 → 926
#    instructions a thread a row block (255 registers, 0 → 16 B spilled); 2 × 2048 without prefetch 976
#    → 914 (226 → 249 registers, 2 an SM either way); 1 × 2048 prefetched 570 → 518 (168 registers, 3 an
#    SM). Prediction: the parts are near issue-bound (run ZZZU: "selected" 1 of 3.8 cycles an issue), so
#    −3 to −8 % for the best held configuration against the heuristic's 2 × 2048 prefetched.
#  - fused LayerNorm memcheck: tools/sanitize_sweep.py's new family (fused_layer_norm) over the split
#    configurations at their narrowest widths, forward and backward (saved / recomputed statistics).
# Outcome (µs, 2 rounds, main → held): the heuristic's 2 × 2048 prefetched 134.7 → 134.5 (4096×16384),
#   510.4 → 531.1 (4096×65536, +4 %), 561.6 → 538.5 (2048×131072, −4 %); 1 × 2048 prefetched three an SM
#   137.9 → 150.1, 567.2 → 503.3, 562.7 → 628.2; without prefetch ±3 %. The sign flips with the width and
#   the tile: not the instruction count (−9 to −10 %) that sets these times. Not taken (the flag left as
#   the patch). Memcheck of the fused LayerNorm's split configurations (forward, backward saved /
#   recomputed): 25 runs, 0 errors.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?go} in
go)
  H=/tmp/ab/hold
  patched_copy $H docs/experiments/backward-hold-fp32.patch \
      && sed -i 's/HOLD_FP32: tl.constexpr = False/HOLD_FP32: tl.constexpr = True/' $H/normkit/kernels/backward.py \
      && grep -q "HOLD_FP32: tl.constexpr = True" $H/normkit/kernels/backward.py || echo "hold: build failed"
  arm() {
    TUNE_LIMIT=150 tune_in "$1" --kind bwd --family layer_norm --dtype bf16 --shapes 4096x16384,4096x65536,2048x131072 \
        --config 2x2048:4:split:pf:p2 --config 2x2048:4:split:p2 --config 1x2048:4:split:pf:p3 \
        --config 1x2048:4:split:p3 | grep -v heuristic
  }
  ab_rounds 2 arm "$PWD" $H | tee "$L/hold.log"
  san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 "$san" --tool memcheck --target-processes all python3 \
      tools/sanitize_sweep.py --split only --widths lo --families fused_layer_norm > "$L/memcheck_fln.log" 2>&1
  echo "memcheck split lo fused_layer_norm (exit $?): $(grep -c ': ok (' "$L/memcheck_fln.log") runs ok," \
       "$(grep -c FAIL "$L/memcheck_fln.log") failed; $(grep 'ERROR SUMMARY' "$L/memcheck_fln.log" | sort | uniq -c | tr '\n' ' ')" ;;
esac
pack_logs
