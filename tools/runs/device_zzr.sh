#!/usr/bin/env bash
# Device run ZZR (prepared in session 13 for the next session, nvidia-h200-x2, ~5 min: parts 1-2 on GPU 0,
# 3-4 on GPU 1): issue #4's
# families on wide rows, where they sit far below 90 % of copy (run ZZO, bf16, µs): LayerNorm
# 4096×65536 forward 447-450 (57 %), backward 813 (47 %); 2048×131072 482 / 821 (53 / 47 %); the
# fused add 4096×65536 724-739 / 716-719 (70 / 72 %). Counted (tools/ptx_stats.py --kind bwd
# --widths 65536 --tile 1x8192w8pS etc., sm_90): every family's split part is 1 × 8192 on 8 warps
# with prefetch, 255 registers; spills RMSNorm 16 B, fused add 20 B, LayerNorm 68 B (22 barriers
# against 14). Without prefetch LayerNorm spills 4 B; 1 × 4096 on 8 warps 167-187 registers, no spill.
# 1) the split-row backward sweep for LayerNorm and the fused add (tools/tune.py --split only: parts
#    of 2048-16384 columns, 1-4 rows, 8-32 warps, with and without prefetch);
# 2) LayerNorm's and the fused add's forward on rows of 32768 (LayerNorm not re-read: ±1.5 in run
#    ZZN) and 65536: column tiles of 4096-16384 on 16-32 warps against the heuristic's.
# 3) docs/experiments/forward-column-stages.patch (the column tiles' statistics pass staged in
#    shared memory), applied to a copy of main: its tiles swept through tools/tune.py from there.
# 4) docs/experiments/forward-split-rows.patch's split forward tiles (part 4 below).
# Prediction: a LayerNorm split part without prefetch or of 4096 columns −10 to −25 % at 65536 (the
# spills and the barriers); forward column tiles ±5 %; staged column tiles −10 to −25 % for the fused
# add and LayerNorm where their programs an SM hold (the patch's header), RMSNorm ±3 %.
# Outcome (run ZZR, session 14, bf16, µs, % of copy): (1) LayerNorm's split backward parts of 2 × 4096
# with prefetch 686.0 (16 warps) / 689.1 (8) against 814.5 for 1 × 8192 at 4096×65536, 720.0 against
# 820.5 at 2048×131072 (−12 to −16 %, as predicted); the fused add keeps 1 × 8192 (720.0; 2 × 4096
# 766.2). (2) Forward column tiles unstaged: LayerNorm 1 × 8192 on 16 warps 421.5 against 436.5
# (−3 %), the fused add none better; LayerNorm 8192×32768's whole row (342.5) beat every column tile.
# (3) Staged column tiles: LayerNorm 1 × 8192 on 16 warps, 3 stages 384.3 against 441.2 (−13 %),
# 402.9 against 497.5 at 2048×131072 (−19 %); RMSNorm and the fused add slower staged (381.8 vs
# 309.0; 845.5 vs 719.9). (4) Split forward: the fused add 1 × 4096 on 8 warps, 4 an SM 607.3
# against 722.3 (−16 %), 613.3 against 818.9 (−25 %); RMSNorm 375.4 vs 309.0 and LayerNorm 523.3 vs
# 444.0 slower. Landed in run ZZS's A/B: (1) for LayerNorm, (3) for LayerNorm, (4) for the fused add.
source tools/device_env.sh
t() { timeout 150 python3 tools/tune.py "$@" 2>&1 | grep -E "each|heuristic|^    |MISMATCH|Error"; }
in_copy() {  # DIR PATCH: main's normkit and tools in /tmp/ab/DIR with PATCH applied
  mkdir -p "/tmp/ab/$1" && cp -r normkit tools pyproject.toml "/tmp/ab/$1/" && \
    (cd "/tmp/ab/$1" && git apply --include="normkit/*" --include="tools/*" "$OLDPWD/$2") || echo "patch $2 failed"
}
sweep_in() {  # DIR TUNE_ARGS...: tools/tune.py of the patched copy, its normkit
  local dir=$1; shift
  (cd "/tmp/ab/$dir" && PYTHONPATH=/tmp/site:$PWD timeout 150 python3 tools/tune.py "$@" 2>&1 \
    | grep -E "each|heuristic|MISMATCH|Error")
}
in_copy colst docs/experiments/forward-column-stages.patch
in_copy splitf docs/experiments/forward-split-rows.patch
(
  export CUDA_VISIBLE_DEVICES=0
  echo "== 1) split-part backward sweeps"
  t --kind bwd --family layer_norm --shapes 4096x65536,2048x131072 --split only --ppsm 1
  t --kind bwd --family fused_add --shapes 4096x65536 --split only --ppsm 1
  echo "== 2) forward column tiles"
  for fam in layer_norm fused_add; do
    t --kind fwd --family $fam --shapes 8192x32768,4096x65536 --each --config 1x16384:32:col --config 1x8192:16:col \
        --config 1x8192:32:col --config 2x8192:32:col --config 1x4096:16:col
  done
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  for fam in rms fused_add layer_norm; do
    echo "== 3) staged column tiles, $fam"
    sweep_in colst --kind fwd --family $fam --shapes 4096x65536,2048x131072 --each --config 1x16384:32:col \
        --config 1x16384:32:col:s2 --config 1x8192:16:col:s2 --config 1x8192:16:col:s3 --config 1x4096:16:col:s3
    echo "== 4) split forward, $fam"
    sweep_in splitf --kind fwd --family $fam --shapes 4096x65536,2048x131072 --each --config 1x4096:8:split:p4 \
        --config 1x4096:8:split:p2 --config 1x8192:16:split:p2 --config 1x8192:8:split:p2 --config 1x16384:16:split
  done
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
