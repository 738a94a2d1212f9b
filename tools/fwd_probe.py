"""The shared harness of the forward probes (tools/persistent_fwd_probe.py, tools/tma_fwd_probe.py):
bf16 inputs for each shape, normkit's forward timed and kept as the reference, then each candidate
kernel launch checked against that reference and timed the same way (CUDA-graph replays over
rotated input sets, % of the copy bandwidth measured in the same process). GPU only."""

import torch

from normkit import ops
from normkit.bench.timing import copy_bandwidth, graph_time, input_sets_needed, min_bytes


def run(family: str, shapes: str, candidates) -> int:
    """candidates(m, n, sms) yields (name, launch) with launch(x, w, b, y, mean, rstd, rms) one
    forward of the candidate; prints each one's time and the five fastest a shape."""
    dev = torch.device("cuda")
    sms = ops.multiprocessor_count(dev)
    bw = copy_bandwidth(dev)
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    rms = family == "rms"
    side = torch.cuda.Stream()
    for shape in shapes.split(","):
        m, n = map(int, shape.split("x"))
        nbytes = min_bytes("fwd", m, n, 2, family)
        sets = input_sets_needed(nbytes)
        g = torch.Generator(device=dev).manual_seed(0)
        xs = [torch.randn(m, n, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(sets)]
        w = (1 + 0.1 * torch.randn(n, device=dev, generator=g)).to(torch.bfloat16)
        b = (0.1 * torch.randn(n, device=dev, generator=g)).to(torch.bfloat16)
        ys = [torch.empty_like(x) for x in xs]
        mean, rstd = torch.empty(m, device=dev), torch.empty(m, device=dev)
        pct = lambda t: 100 * nbytes / t / bw  # noqa: E731
        with torch.cuda.stream(side):
            base = [lambda i=i: ops.launch_fwd(xs[i], ys[i], weight=w, bias=None if rms else b, mean=None if rms else mean,
                                               rstd=rstd, eps=1e-5, is_rms_norm=rms) for i in range(sets)]
            base[0]()
            ref = ys[0].clone()
            t0 = graph_time(base)
            print(f"{shape} {family} normkit forward: {t0 * 1e6:.1f} us ({pct(t0):.0f}%)", flush=True)
            rows = []
            for name, launch in candidates(m, n, sms):
                def call(i, launch=launch):
                    launch(xs[i], w, b, ys[i], mean, rstd, rms)
                try:
                    call(0)
                    torch.cuda.synchronize()
                    ok = torch.allclose(ys[0].float(), ref.float(), rtol=1e-2, atol=1e-2)
                    t = graph_time([lambda i=i: call(i) for i in range(sets)])
                except Exception as e:  # noqa: BLE001 - report, go on
                    print(f"  {name}: {type(e).__name__} {str(e)[:120]}", flush=True)
                    continue
                rows.append((t, name, ok))
                print(f"  each {t * 1e6:.1f} us ({pct(t):.0f}%) {name} ok={ok}", flush=True)
            rows.sort()
            for t, name, ok in rows[:5]:
                print(f"  best {t * 1e6:.1f} us ({pct(t):.0f}%) {name} ok={ok}", flush=True)
        del xs, ys
        torch.cuda.empty_cache()
    return 0
