#!/usr/bin/env bash
# Device run ZZZR (session 17, nvidia-h200-x2, ~1 min; carry [".whl"]):
# why RMSNorm bf16 131072×8192's backward depends on its input values. Session 17 (BENCHMARKS
# "Session 17"): the same kernel, tile and placement ran 1535-1552 µs in 32 fresh processes on N(0, 1)
# x and dy with a random rstd, but 1725-1754 in 11 of 12 processes on the benchmark's inputs (dy = 0.5·x
# + noise, weight ~ 1 + 0.25·N(0, 1), the forward's rstd). No branch of the kernel depends on a value,
# so the suspects are the clocks: power drawn by the bits that toggle (HBM and the SMs), and the
# power cap. Here nvidia-smi samples SM / memory clocks, power and throttle reasons every 50 ms while
# each GPU runs three processes of each kind, alternated.
# Prediction: the slow processes show a lower SM clock or a power-cap throttle reason; if the clocks
# are equal in both kinds, the cause is elsewhere (next: dx's values — written data toggles too).
# Outcome: the same split as before — randn 1543.6 / 1541.1 / 1542.8 and 1546.4 / 1540.2 / 1539.6 µs,
# the benchmark's inputs 1731.2 / 1722.7 / 1730.2 and 1737.2 / 1731.1 / 1729.6 — at the same clocks:
# SM 1980 MHz, memory 3201 MHz in every phase (medians over 50 ms samples; the power medians, 118-130
# W, are mostly idle samples: a process is ~5 s, a timing ~0.5 s), throttle reasons only 0x0 / 0x1
# (idle): no power or thermal cap. Not the clocks. Calls after it (BENCHMARKS "Session 17"): not the
# values either.
source tools/device_env.sh
for gpu in 0 1; do
  (
    export CUDA_VISIBLE_DEVICES=$gpu
    nvidia-smi -i $gpu --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
        --format=csv,noheader -lms 50 > "$L/smi$gpu.csv" &
    smi=$!
    for i in 1 2 3; do
      for kind in randn bench; do
        flag=; [ $kind = bench ] && flag=--bench-inputs
        echo "start $kind $i $(date +%H:%M:%S.%N)"
        timeout 40 python3 tools/offset_probe.py --separate --api --repeats 1 $flag | sed "s/^/$kind $i /"
        echo "end $kind $i $(date +%H:%M:%S.%N)"
      done
    done
    kill $smi
    # each phase's samples: median SM clock, memory clock, power, and the throttle reasons seen
    python3 - "$L/smi$gpu.csv" "$L/gpu$gpu.log" <<'PY'
import re, statistics, sys
samples = [l.split(", ") for l in open(sys.argv[1]) if l.strip()]
phases = re.findall(r"start (\w+) (\d) (\S+)\n(?:.*\n)*?end \1 \2 (\S+)", open(sys.argv[2]).read())
for kind, i, t0, t1 in phases:
    rows = [s for s in samples if t0[:8] <= s[0].split()[-1][:8] <= t1[:8]]
    num = lambda k: statistics.median(float(r[k].split()[0]) for r in rows) if rows else float("nan")
    print(f"{kind} {i}: {len(rows)} samples, SM {num(1):.0f} MHz, mem {num(2):.0f} MHz, "
          f"{num(3):.0f} W, {num(4):.0f} C, throttle {sorted(set(r[5].strip() for r in rows))}")
PY
  ) > "$L/gpu$gpu.log" 2>&1 &
done
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
