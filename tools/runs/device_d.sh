#!/usr/bin/env bash
# Device run D: the whole test suite on the GPU (features added after run C: casting modes,
# grader, patching, demo, distributed helpers), the challenge's performance case for normkit's own
# solve and for a plain-PyTorch solution, and the training demo's parity and step time.
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $OUT/gpu.txt
which compute-sanitizer ncu 2>&1 | tee -a $OUT/gpu.txt
timeout 220 python -m pytest tests -q -p no:cacheprovider -x 2>&1 | tail -25 | tee $OUT/pytest.log
for sol in "" "--solution examples/rms_norm_backward_pytorch.py"; do
  timeout 60 python -m normkit challenge rms-norm-backward $sol --action submit 2>&1 | tail -4 | tee -a $OUT/challenge.log
done
timeout 60 python -m normkit demo --dtype fp32 --steps 200 --every 50 --json $OUT/demo_fp32.json 2>&1 | tail -9 | tee $OUT/demo.log
timeout 60 python -m normkit demo --dtype bf16 --steps 200 --every 50 --json $OUT/demo_bf16.json 2>&1 | tail -9 | tee -a $OUT/demo.log
timeout 120 python -m normkit demo --dtype bf16 --hidden 4096 --layers 2 --heads 32 --seq 1024 --batch 8 --steps 30 --every 10 --json $OUT/demo_4096.json 2>&1 | tail -8 | tee -a $OUT/demo.log
