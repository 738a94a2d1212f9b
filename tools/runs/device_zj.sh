#!/usr/bin/env bash
# Device run ZJ (session 8, nvidia-h200-x2, the session's last ~5 device minutes): rows of
# 8192 < N ≤ 16384 as split rows — parts of 2 rows × 4096 on 8 warps, prefetching
# (config._NARROW_SPLIT; run ZI's sweep: fused add 4096×16384 172.2 µs against 202.7 for the whole
# row, RMSNorm 141.7 against ~142; LayerNorm not swept).
# Prediction: fused add 4096×16384 −10-15 %, LayerNorm (whole row spills 368 B, 46 % of copy) −10 %
# or more, RMSNorm ±2 %.
# GPU 0: A/B against HEAD's build (base_build/, by hand: git archive HEAD normkit pyproject.toml),
# 4096×16384 bf16, every family, 2 rounds, each build from its own directory.
# GPU 1: the GPU tests of split rows and of every heuristic configuration (the new split compiled
# and checked against float64 on the GPU).
source tools/device_env.sh
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  for round in 1 2; do
    for build in base new; do
      dir=$ROOT/base_build; [ $build = new ] && dir=$ROOT
      (cd $dir && PYTHONPATH=/tmp/site timeout 45 python3 -m normkit bench --family all --impls normkit --dtypes bf16 \
          --shapes 4096x16384 --json $L/ab_${build}_$round.json > $L/ab_${build}_$round.log 2>&1
       echo "== $build round $round rc=$? $(cd $dir && PYTHONPATH=/tmp/site python3 -c 'import normkit; print(normkit.__file__)')")
    done
  done
  python3 tools/ab_summary.py $L | tee $L/ab_summary.txt
) &
(
  export CUDA_VISIBLE_DEVICES=1
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 190 python3 -m pytest -q -p no:cacheprovider -rfE -W ignore::DeprecationWarning \
      tests/test_split_rows.py tests/test_properties.py -k "split or heuristic" > $L/tests.log 2>&1
  echo "tests rc=$? $(tail -1 $L/tests.log)"; grep -E "^(FAILED|ERROR)|configurations" $L/tests.log | head
) &
wait
pack_logs
