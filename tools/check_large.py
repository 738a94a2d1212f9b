"""GPU check: the heuristics' configurations on wide rows against float64, fwd and bwd (dev tool)."""

import sys

import torch

import normkit

SHAPES = [(2048, 131072), (4096, 65536), (8192, 32768), (4096, 16384), (16384, 8192), (16384, 4096),
          (524288, 128), (1024, 262144)]


def rel(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


def main():
    ok = True
    for m, n in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(m + n)
        x = torch.randn(m, n, device="cuda", generator=g, dtype=torch.bfloat16)
        dy = (0.5 * x + torch.randn(m, n, device="cuda", generator=g)).bfloat16()
        w = (1 + 0.1 * torch.randn(n, device="cuda", generator=g)).bfloat16()
        y, _, rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)
        dx, dw, _, _ = normkit.rms_norm_bwd(x, w, dy, rstd)
        dx2, dw2, _, _ = normkit.rms_norm_bwd(x, w, dy, None)
        x64, dy64, w64 = x.double(), dy.double(), w.double()
        r = torch.rsqrt(x64.square().mean(-1, keepdim=True) + 1e-6)
        xh = x64 * r
        g64 = dy64 * w64
        dx_ref = r * (g64 - xh * (g64 * xh).mean(-1, keepdim=True))
        errs = [rel(y, xh * w64), rel(dx, dx_ref), rel(dw, (dy64 * xh).sum(0)), rel(dx2, dx_ref),
                rel(dw2, (dy64 * xh).sum(0))]
        good = all(e < 8e-3 for e in errs)
        ok &= good
        print(f"{m}x{n} bf16 y {errs[0]:.1e} dx {errs[1]:.1e} dw {errs[2]:.1e} | recompute dx {errs[3]:.1e} "
              f"dw {errs[4]:.1e} {'OK' if good else 'FAIL'}", flush=True)
        del x, dy, x64, dy64, xh, g64, dx_ref, dx, dx2
        torch.cuda.empty_cache()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
