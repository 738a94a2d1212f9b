"""The forwards with tensors in other dtypes than x against torch.compile of the same composite, in one process:
y in another dtype (`out_dtype`, e.g. bf16 x with an fp32 y), and the fused forwards' residual in another
(`--residual-dtype`, e.g. bf16 x with the residual stream kept in fp32: h = x + residual in fp32, stored as
residual_out in the residual's dtype) — the benchmark CLI's families keep every tensor in x's dtype.

GPU time as the CLI's (normkit.bench.timing: CUDA-graph replays, inputs rotated past L2) and % of the copy
bandwidth measured in the same run, the minimum bytes M·N·(x's size + y's size (+ 2 × the residual's size)).
RMSNorm, or LayerNorm (`--family layer_norm`, with a bias). GPU only:

    python tools/out_dtype_peer.py --dtype bf16 --out-dtype fp32 --shapes 4096x65536,2048x131072
    python tools/out_dtype_peer.py --family layer_norm --out-dtype bf16 --residual-dtype fp32 --shapes 8192x32768

--code also prints the Triton kernels torch.compile generated for each shape (Inductor's launch configuration
in their heuristics' decorator).
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import normkit  # noqa: E402
from normkit.bench import timing  # noqa: E402
from normkit.bench.peers import compiled  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
EPS = 1e-6


def composite_out(x, weight, bias, residual, eps, out_dtype, compute=torch.float32):
    """The plain PyTorch forward given to torch.compile: h = x (+ residual) in `compute`, RMSNorm (bias None) or
    LayerNorm of h, y stored in out_dtype; (y, h in the residual's dtype) with a residual. float64 `compute`:
    the reference."""
    h = x.to(compute) if residual is None else x.to(compute) + residual.to(compute)
    if bias is None:
        y = h * torch.rsqrt(h.square().mean(dim=-1, keepdim=True) + eps) * weight.to(compute)
    else:
        y = torch.nn.functional.layer_norm(h, h.shape[-1:], weight.to(compute), bias.to(compute), eps)
    return y.to(out_dtype) if residual is None else (y.to(out_dtype), h.to(residual.dtype))


def normkit_out(x, weight, bias, residual, eps, out_dtype):
    """normkit's forward of the same composite (prenorm: y and residual_out with a residual)."""
    kwargs = dict(residual=residual, eps=eps, out_dtype=out_dtype, prenorm=residual is not None)
    if bias is None:
        return normkit.rms_norm(x, weight, **kwargs)
    return normkit.layer_norm(x, weight, bias, **kwargs)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", choices=["rms", "layer_norm"], default="rms")
    p.add_argument("--dtype", choices=DTYPES, default="bf16")
    p.add_argument("--out-dtype", choices=DTYPES, default="fp32")
    p.add_argument("--residual-dtype", choices=DTYPES,
                   help="the fused forward (prenorm) with a residual in this dtype (default: no residual)")
    p.add_argument("--shapes", default="4096x65536,2048x131072,1024x262144", help="MxN,...")
    p.add_argument("--code", action="store_true", help="print torch.compile's generated kernels")
    args = p.parse_args(argv)
    try:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
        if any(len(s) != 2 or min(s) < 1 for s in shapes):
            raise ValueError
    except ValueError:
        p.error(f"--shapes expects MxN,... with M, N ≥ 1, got {args.shapes!r}")
    if not torch.cuda.is_available():
        p.error("times GPU kernels: needs a CUDA GPU")
    dtype, out_dtype = DTYPES[args.dtype], DTYPES[args.out_dtype]
    res_dtype = DTYPES[args.residual_dtype] if args.residual_dtype else None
    layer_norm = args.family == "layer_norm"
    device = torch.device("cuda")
    copy = timing.copy_bandwidth(device)
    print(f"copy bandwidth {copy / 1e9:.0f} GB/s; {'LayerNorm' if layer_norm else 'RMSNorm'} forward, {args.dtype} x, "
          f"{args.out_dtype} y, weight {args.dtype}"
          + (f", {args.residual_dtype} residual (prenorm)" if res_dtype else ""))
    peer = compiled(composite_out)
    for m, n in shapes:
        nbytes = m * n * (dtype.itemsize + out_dtype.itemsize + (2 * res_dtype.itemsize if res_dtype else 0))

        def inputs():
            return (torch.randn(m, n, device=device, dtype=dtype), torch.rand(n, device=device, dtype=dtype) + 0.5,
                    torch.randn(n, device=device, dtype=dtype) if layer_norm else None,
                    torch.randn(m, n, device=device, dtype=res_dtype) if res_dtype else None)

        sets = [inputs() for _ in range(timing.input_sets_needed(nbytes))]
        impls = {"normkit": lambda *t: normkit_out(*t, EPS, out_dtype), "compile": lambda *t: peer(*t, EPS, out_dtype)}
        if args.code:
            from torch._inductor.utils import run_and_get_code

            for source in run_and_get_code(peer, *sets[0], EPS, out_dtype)[1]:
                print(source)
        want = composite_out(*sets[0], EPS, torch.float64, compute=torch.float64)
        want = want[0] if res_dtype else want
        cells = []
        for name, fn in impls.items():
            got = fn(*sets[0])
            error = ((got[0] if res_dtype else got).double() - want).abs().max().item()
            with torch.cuda.stream(torch.cuda.Stream()):
                seconds = timing.graph_time([lambda s=s: fn(*s) for s in sets])
            cells.append(f"{name} {seconds * 1e6:.1f} us ({timing.percent_of_copy(nbytes, seconds, copy):.0f} %, "
                         f"max err {error:.1e})")
        print(f"{m}x{n}: " + ", ".join(cells), flush=True)
        del sets


if __name__ == "__main__":
    main()
