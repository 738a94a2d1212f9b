"""Host overhead of one eager call (dev tool): wall µs per call and a cProfile of the slow path.

    python tools/profile_host.py
"""

import cProfile
import pstats
import time

import torch
import torch.nn.functional as F

import normkit


def wall(fn, n=200):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def main():
    for m, n, dtype in [(8, 4096, torch.bfloat16), (64, 256, torch.float32), (4096, 2048, torch.bfloat16)]:
        x = torch.randn(m, n, device="cuda", dtype=dtype, requires_grad=True)
        w = torch.ones(n, device="cuda", dtype=dtype, requires_grad=True)
        dy = torch.randn_like(x)
        rstd = normkit.rms_norm_fwd(x.detach(), w.detach(), store_rstd=True)[2]
        y_kept = normkit.rms_norm(x, w)
        y_native = F.rms_norm(x, (n,), w, 1e-6)
        rows = {
            "native fwd": lambda: F.rms_norm(x, (n,), w, 1e-6),
            "native fwd+bwd": lambda: torch.autograd.grad(F.rms_norm(x, (n,), w, 1e-6), (x, w), dy),
            "normkit fwd (autograd)": lambda: normkit.rms_norm(x, w),
            "normkit fwd+bwd": lambda: torch.autograd.grad(normkit.rms_norm(x, w), (x, w), dy),
            "normkit rms_norm_fwd": lambda: normkit.rms_norm_fwd(x.detach(), w.detach(), store_rstd=True),
            "normkit rms_norm_bwd": lambda: normkit.rms_norm_bwd(x.detach(), w.detach(), dy, rstd),
            "normkit bwd via autograd": lambda: torch.autograd.grad(y_kept, (x, w), dy, retain_graph=True),
            "native bwd via autograd": lambda: torch.autograd.grad(y_native, (x, w), dy, retain_graph=True),
        }
        print(f"{m}x{n} {dtype}: " + ", ".join(f"{k} {wall(f):.1f}" for k, f in rows.items()), flush=True)
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.ones(4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn_like(x)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(200):
        torch.autograd.grad(normkit.rms_norm(x, w), (x, w), dy)
    torch.cuda.synchronize()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(22)


if __name__ == "__main__":
    main()
