#!/usr/bin/env bash
# Device run ZK (session 9, nvidia-h200-x2).
# GPU 0 — (1) the copy bandwidth by size: the bench's ceiling is a 2 GiB copy; what does a copy of
#   one forward's bytes (16384×4096 bf16: 128 MiB each way) reach? (issue #4's forward ≥ 95 %);
#   (2) A/B of the working tree against HEAD's build (base_build/: mkdir base_build && git archive
#   HEAD normkit pyproject.toml | tar x -C base_build), 3 rounds, 16384×1024 and ×4096: the
#   candidates 2 × 1024 on 4 warps, 4/SM for RMSNorm and LayerNorm (run ZG's sweep: RMSNorm 29.7
#   against 30.4) and LayerNorm's own 1 × 4096 joined tile on 8 warps, 2/SM (105.5 against 106.2).
#   Prediction: RMSNorm ×1024 −0.5 µs, LayerNorm ×1024 −0.5 to −1, LayerNorm ×4096 −0.5; no other
#   row moves (fused add: the same tiles as before).
# GPU 1 — (1) the persistent grid's tail: row blocks are dealt cyclically, so 16384×2048 in 2-row
#   blocks over 264 programs leaves 8 programs a 32nd block while 256 wait (likewise ×4096 on 132
#   programs: 8 run a 63rd). tools/tune.py --grids times the heuristic's tile with the grid the
#   heuristic picks, the fewest programs with the same rounds, and the largest divisor of the row
#   blocks. Prediction: "divisor" saves up to one row block's latency (~1 µs) where the last round is
#   short; nothing where the row blocks divide already; (2) memcheck over the split configurations,
#   every family (the 2 × 4096 parts of session 8 never ran under it); (3) the heuristic-
#   configuration tests (the candidate tiles compiled with LayerNorm's flags, checked against float64).
source tools/device_env.sh
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  python3 - <<'PY' 2>&1 | tee $L/copy_sizes.log
import torch
from normkit.bench.timing import copy_bandwidth
dev = torch.device("cuda")
for mib in (32, 64, 128, 256, 512, 2048):
    bw = copy_bandwidth(dev, nbytes=mib << 20, repeats=50)
    print(f"copy {mib} MiB each way: {bw / 1e9:.0f} GB/s")
PY
  ab_bench 3 16384x1024,16384x4096 $ROOT/base_build $ROOT
  python3 tools/ab_summary.py $L | tee $L/ab_summary.txt
) &
(
  export CUDA_VISIBLE_DEVICES=1
  for family in layer_norm rms fused_add; do
    timeout 70 python3 tools/tune.py --kind bwd --family $family --shapes 16384x1024,16384x2048,16384x4096,16384x8192 \
        --grids heuristic,balanced,divisor,heuristic --json $L/grids_$family.json 2>&1 | tee $L/grids_$family.log | grep -v "^ "
  done
  OUT=$L FAMILIES=rms,fused_add,layer_norm MEMCHECK_SPLIT_LIMIT=150 bash tools/device_reliability.sh memcheck_split
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 150 python3 -m pytest -q -p no:cacheprovider -rfE -W ignore::DeprecationWarning \
      tests/test_properties.py -k heuristic > $L/tests.log 2>&1
  echo "tests rc=$? $(tail -1 $L/tests.log)"; grep -E "^(FAILED|ERROR)|configurations" $L/tests.log | head
) &
wait
pack_logs
