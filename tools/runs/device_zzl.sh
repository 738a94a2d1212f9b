#!/usr/bin/env bash
# Device run ZZL (session 13, nvidia-h200): the forward's column path with BLOCK_N covering the row
# ("reload": statistics first, then x read again from L2 — what torch.compile's kernels do; run
# ZZK's tools/inductor_code.py: 8192×32768 its 1 × 32768 on 32 warps 257.5 µs against normkit's
# whole row in registers, the same tile, 293.1), in two builds: main's column path (default L2
# policy) and .ab_new's (first pass evict_last, second pass and y evict_first, as Inductor's).
# Prediction: the reload tiles within 2 % of torch.compile at 8192×32768 and 131072×8192; ±1 %
# where normkit is already within 2 % of it (16384×8192, 16384×4096).
# Outcome (run ZZL, one sweep per build, µs): the column path covering the row beats the row kept
# in registers where that holds many registers — 8192×32768 1 × 32768 on 32 warps 293.8 → 275.9 (main's
# policy) / 278.5 (hints), 131072×8192 1147 → 1136 / 1111, fp32 16384×4096 16 warps 132.8 → 130.7 /
# 127.3 — still behind torch.compile's 257.5 at 32768 (its kernel: 32 registers, 2 programs an SM);
# slower at ×4096 bf16 (+2-3), 4096×16384 (+3-9) and LayerNorm (+5-40). Next: run ZZM (a whole-row
# tile that re-reads, under a register cap).
source tools/device_env.sh
REPO=$PWD
sweep() {  # BUILD_DIR TAG: tools/tune.py with explicit tiles per shape
  local dir=$1 tag=$2
  (
    cd "$dir" || exit 1
    t() { PYTHONPATH=/tmp/site:$PWD python3 "$REPO/tools/tune.py" --kind fwd --each "$@" 2>&1; }
    t --family rms --shapes 8192x32768 --config 1x32768:32:col --config 1x32768:16:col --config 1x16384:32:col --config 1x8192:16:col
    t --family rms --shapes 131072x8192,16384x8192 --config 1x8192:16:col --config 1x8192:8:col --config 1x8192:32:col
    t --family rms --shapes 16384x4096,4096x16384 --config 1x4096:8:col --config 1x4096:16:col --config 1x2048:16:col --config 1x16384:32:col
    t --family rms --dtype fp32 --shapes 16384x4096 --config 1x4096:8:col --config 1x4096:16:col
    t --family layer_norm --shapes 16384x4096,16384x2048 --config 1x4096:8:col --config 1x2048:4:col --config 1x2048:8:col
  ) > "$L/zzl_$tag.log" 2>&1
  echo "== $tag"; grep -E "each|heuristic|MISMATCH|Error" "$L/zzl_$tag.log"
}
sweep .ab_base base
sweep .ab_new hint
pack_logs
