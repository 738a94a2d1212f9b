#!/usr/bin/env bash
# Device run ZZX (session 14, nvidia-h200, ~3 min): LayerNorm's forward on rows of 32768, where
# torch.compile is the one peer ahead on a wide row (run ZZT: 277 µs = 91 % against normkit's whole
# row 346 = 73 %). Run ZZW ruled out the per-tile block reductions on normkit's tiles (8192 columns on
# 16 warps). Left to look at: (1) the kernel and configuration Inductor keeps there
# (tools/inductor_code.py, source into $OUT/inductor_ln.txt); (2) small column tiles (1024-4096 columns
# on 4-8 warps: many programs an SM) from main (.ab_base) and from the per-lane build (.ab_new =
# main + docs/experiments/forward-lane-stats.patch), where per-lane accumulators cost no block
# reduction a tile.
# Prediction: Inductor keeps a small reduction block (RBLOCK ≤ 4096) on ≤ 16 warps with several
# programs an SM; the per-lane build gains on small tiles (−10 to −20 % against the whole row), main's
# does not.
# Outcome (run ZZX): torch.compile 280.0 µs (91.2 %), normkit 341.7 (74.7 %) in one process. Inductor's
# kernel ($OUT/inductor_ln.txt): three loops over the row — Σx per lane, Σ(x − mean)² per lane, y —
# XBLOCK 1, R0_BLOCK 16384, 32 warps, num_stages 1 (prediction of a small block: wrong). Small column
# tiles lose in both builds (main 393-435 µs, per-lane 390-470, against the whole row 344-345).
# Next: run ZZY (its three passes on normkit's column tiles).
source tools/device_env.sh
timeout 120 python3 tools/inductor_code.py --family layer_norm --shapes 8192x32768 > "$OUT/inductor_ln.txt" 2>&1
grep -iE "us|config|XBLOCK|R0_BLOCK|RBLOCK|num_warps" "$OUT/inductor_ln.txt" | grep -vE "^\s*#|tl\.|def " | tail -20
for build in .ab_base .ab_new; do
  echo "== $build"
  (cd "$build" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 tools/tune.py --kind fwd --family layer_norm \
      --shapes 8192x32768 --each --config 1x1024:4:col --config 1x2048:4:col --config 1x2048:8:col \
      --config 1x4096:4:col --config 1x4096:8:col --config 1x2048:4:col:s3 2>&1 | grep -E "each|Error" \
      | sed -E 's/TileConfig\(block_m=([0-9]+), block_n=([0-9]+), one_tile=(\w+), num_warps=([0-9]+).*column_stages=([0-9]).*/\1x\2 w\4 one=\3 cs=\5/')
done
