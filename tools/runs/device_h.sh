#!/usr/bin/env bash
# Device run H (session 3, nvidia-h200-x2): three jobs at once, each on its own GPU(s):
#   both GPUs  tests/test_distributed.py (gloo on CPU and NCCL, one GPU a rank)        -> distributed.log
#   GPU 1      tools/runs/device_g.sh over the GPU test files not yet re-run since fixes    -> <file>.log
#   GPU 0      tools/device_reliability.sh (sanitizers, > 2**31 elements, ...)         -> see that script
source tools/device_env.sh
nvidia-smi -L
python3 -c 'import torch; print("cuda devices", torch.cuda.device_count(), torch.__version__)'
( PYTHONPATH=/tmp/site:$PWD timeout ${DIST_LIMIT:-300} python3 -m pytest tests/test_distributed.py -v -p no:cacheprovider -rfE \
    > $OUT/distributed.log 2>&1; echo "distributed rc=$? $(tail -1 $OUT/distributed.log)" ) &
( CUDA_VISIBLE_DEVICES=1 FILES="${FILES:-test_challenge_grader test_patch test_demo test_report test_validation}" \
    PER_FILE=${PER_FILE:-110} bash tools/runs/device_g.sh ) &
( [ -n "$RELIABILITY" ] && CUDA_VISIBLE_DEVICES=0 bash tools/device_reliability.sh $RELIABILITY ) &
wait
