#!/usr/bin/env bash
# Device run ZI (session 8, nvidia-h200-x2): run ZH's side-by-side showed RMSNorm bwd 4096×16384 at
# 180 µs against 146 in run ZC. ptxas: the 1 × 16384 tile on 8 warps (which spills anyway) spills
# 180 B without Σg against 152 B with it. Arms, alternated twice on GPU 0 (bf16 4096×16384, every
# family, each build from its own directory): base_build/ (HEAD), the working tree (no Σg for
# RMSNorm), v1_build/ (Σg still used by RMSNorm on tiles that do not keep the weight, i.e. 16384;
# both made by hand, not committed). Prediction: v1 ≈ base (146), the working tree slower.
# GPU 1: split rows at 4096×16384 on the working tree (tools/tune.py --split only): does a split
# part of 8192 (no spills) now beat the whole row?
source tools/device_env.sh
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  for round in 1 2; do
    for build in base new v1; do
      dir=$ROOT/base_build; [ $build = new ] && dir=$ROOT; [ $build = v1 ] && dir=$ROOT/v1_build
      (cd $dir && PYTHONPATH=/tmp/site timeout 60 python3 -m normkit bench --family all --impls normkit --dtypes bf16 \
          --shapes 4096x16384 --json $L/ab_${build}_$round.json > $L/ab_${build}_$round.log 2>&1
       echo "== $build round $round rc=$? $(cd $dir && PYTHONPATH=/tmp/site python3 -c 'import normkit; print(normkit.__file__)')")
    done
  done
  python3 - <<'PY'
import json, glob, os, collections
L = os.environ["OUT"] + "/logs"
t = collections.defaultdict(list)
for p in sorted(glob.glob(L + "/ab_*.json")):
    build = os.path.basename(p).split("_")[1]
    for r in json.load(open(p))["results"]:
        if "bwd_s" in r:
            t[(r["family"], build)].append((round(r["bwd_s"] * 1e6, 1), round(r["fwd_s"] * 1e6, 1)))
for k in sorted(t):
    print(k, "bwd/fwd µs per round:", t[k])
PY
) &
(
  export CUDA_VISIBLE_DEVICES=1
  for family in rms fused_add; do
    timeout 100 python3 tools/tune.py --kind bwd --family $family --shapes 4096x16384 --split only --ppsm 1 \
        > $L/tune_split_$family.log 2>&1
    echo "== tune split $family rc=$?"; grep -A5 heuristic $L/tune_split_$family.log
  done
) &
wait
pack_logs
