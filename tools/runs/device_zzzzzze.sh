#!/usr/bin/env bash
# Device run ZZZZZZE (prepared in session 37 for the next session, nvidia-h200; no carry needed):
#  Why: the split forward is bound by its L2 traffic (run ZZZZZZB: LayerNorm bf16 2048×131072 318 µs with its
#  weight and bias, 279 without); design change 40 holds them for LayerNorm's 4-byte parts only, because
#  held 2-byte values spilled (1 × 8192 on 4: 253 registers uncapped, 404 B spilled at 128). Counted on the
#  CPU (tools/ptx_stats.py --tile … --flags HOLD_WEIGHT=1, sm_90): LLVM hoisted the held values' upcast out
#  of the row loop, holding them as float32 — twice the registers. docs/experiments/split-forward-hold-bf16.patch
#  converts held values at their use with a non-pure asm (convert.upcast_held: a register's bf16 pair at a
#  time, not hoistable) and loads them in x's tile layout (held as a broadcast [1, BLOCK_N] row, the asm's
#  operands took a layout conversion, 15 more bar.sync). Then: LayerNorm bf16 131072 1 × 8192 on 4 held 210
#  registers uncapped, 0 B spilled at cap 168 (three an SM; main: four at 128), 1 × 4096 on 4 114 (four an
#  SM; 96 capped: five, 0 B), 2 × 4096 on 4 at 168 0 B, 1 × 8192 on 8 117 (two an SM); RMSNorm bf16 1 × 8192 on
#  4 held **126 registers, four an SM** (main 127). The patch also holds x, where a part holds the previous row
#  block (not RELOAD) and has no residual (h = x), as loaded — bf16 pairs, upcast at use — not as float32 h:
#  LayerNorm 1 × 4096 on 4 holding x and w and b 125 registers, four an SM, 0 B spilled (x read once, w and b
#  once a program: the minimum through L2), holding x alone 128; RMSNorm 1 × 8192 on 4 holding x 128 (four an
#  SM), 1 × 4096 on 4 holding x and w 94 (five), 1 × 8192 on 8 96 (two). No heuristic tile holds x (the split
#  forward's tables re-read it; the fused forwards, which hold h, have a residual): the PTX of every heuristic
#  kernel is unchanged by the patch. The patched tree passes tests/test_gpu_compile.py on the CPU.
#  - `sweep` (~7 min, limits 260 + 150 s, the patched build, tools/tune.py --each: the heuristic and forced `:hold` tiles in one
#    process, each output checked): LayerNorm bf16 2048×131072, 1024×262144, 4096×65536 — re-reading x, holding
#    w and b: 1 × 8192 on 4 three an SM capped 168, 1 × 4096 on 4 four an SM capped 128 and five capped 96,
#    2 × 4096 on 4 three capped 168, 1 × 8192 on 8 two capped 128; holding x: 1 × 4096 on 4 four an SM with and
#    without w and b; RMSNorm bf16 2048×131072, 1024×262144 — 1 × 8192 on 4 four an SM holding w, holding x;
#    1 × 4096 on 4 five an SM and 1 × 8192 on 8 two an SM holding both.
#    Prediction: LayerNorm bf16 one tile 5-12 % under the heuristic (318 → 280-300 µs at 2048×131072),
#    RMSNorm −1 to −2 % (without w it ran 281 against 286).
#  - `fp32` (~1 min, main → patch, 2 rounds): the landed fp32 held parts (4096×65536, fp32 x with a bf16 y) must
#    not move (their w and b are fp32: upcast_held is a no-op there, but the tile layout of the load is new).
#    Prediction ±1 %.
#  - `fused` (~2 min, the patched build): the fused add's and the fused LayerNorm's staged parts (1 × 2048 on 4,
#    eight an SM asked, 3 stages) holding their weight (the fused add: 72 → 96 registers, 7 → 5 an SM fit, 18 →
#    12 cp.async: w no longer staged) at 4096×65536 and 2048×131072, against the heuristic. Prediction ±2 %
#    (run ZZZZZZB's hoisted hold: the fused add −1 %, the fused LayerNorm +5.5 %).
#  Land (config/forward.py _FWD_SPLIT_HOLD_WEIGHT / the split tables) what wins > 2 % with checks passing
#  (device_zzzzzzc.sh `checks` on the new tree), then BENCHMARKS, a design change.
#  Outcome (session 38, `sweep`; `fused` and `fp32` went to run ZZZZZZG on the landing tree), µs, the heuristic first:
#  LayerNorm bf16 2048×131072 318.4; held 1 × 8192 on 4 capped 168 314.8 (−1.1 %), 1 × 4096 on 4 capped 128
#  355.0, capped 96 (five an SM) 323.2, not held 376.6, 2 × 4096 capped 168 338.0, 1 × 8192 on 8 379.0; holding x
#  (not reload) with w and b 352.0, x only 353.0. 1024×262144 319.4 → 313.4 (−1.9 %) the best, 4096×65536
#  313.1 → 309.3 (−1.2 %). Under 2 %: LayerNorm bf16 not landed (its 80 % stays). **RMSNorm bf16 1 × 8192 on 4
#  (the heuristic's part) holding w: 2048×131072 283.1 → 271.2 (−4.2 %, 93 % of copy), 1024×262144 281.9 →
#  273.0 (−3.2 %)**; not reload 294.5 / 288.0, 1 × 4096 on 4 held 284.0 / 293.3, 1 × 8192 on 8 321.3 / 318.4.
#  Holding x lost everywhere (not in the landing). RMSNorm's 2-byte held parts land in session 38 (run ZZZZZZG).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
P=/tmp/ab/hold-bf16
for call in "${@:?sweep|fused|fp32 ...}"; do
case $call in
sweep|fused|fp32) [ -d $P ] || patched_copy $P docs/experiments/split-forward-hold-bf16.patch ;;&
sweep) TUNE_LIMIT=260 tune_in $P --kind fwd --family layer_norm --dtype bf16 --shapes 2048x131072,1024x262144,4096x65536 \
      --config 1x8192:4:split:reload:p3:r168:hold --config 1x4096:4:split:reload:p4:r128:hold \
      --config 1x4096:4:split:reload:p5:r96:hold --config 1x4096:4:split:reload:p4:r128 \
      --config 2x4096:4:split:reload:p3:r168:hold --config 1x8192:8:split:reload:p2:r128:hold \
      --config 1x4096:4:split:p4:r128:hold --config 1x4096:4:split:p4:r128 | tee -a "$L/sweep.log"
  TUNE_LIMIT=150 tune_in $P --kind fwd --family rms --dtype bf16 --shapes 2048x131072,1024x262144 \
      --config 1x8192:4:split:reload:p4:hold --config 1x8192:4:split:p4:r128 --config 1x4096:4:split:p5:hold \
      --config 1x8192:8:split:p2:hold | tee -a "$L/sweep.log" ;;
fused) for fam in "fused_add" "layer_norm --residual"; do
    TUNE_LIMIT=120 tune_in $P --kind fwd --family $fam --dtype bf16 --shapes 4096x65536,2048x131072 \
        --config 1x2048:4:split:a3:p8:hold | tee -a "$L/fused.log"
  done ;;
fp32) fp32_arm() {
    heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536
    heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype fp32 --out-dtype bf16 --shapes 4096x65536
  }
  ab_rounds 2 fp32_arm "$PWD" $P | tee -a "$L/fp32.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
