"""RMSNorm's forward with y in another dtype than x (`out_dtype`, bf16 / fp16 x with an fp32 y): normkit
against torch.compile of the same composite in one process — the benchmark CLI's families keep y in x's dtype.

GPU time as the CLI's (normkit.bench.timing: CUDA-graph replays, inputs rotated past L2) and % of the copy
bandwidth measured in the same run, the minimum bytes M·N·(x's size + y's size). GPU only:

    python tools/out_dtype_peer.py --dtype bf16 --out-dtype fp32 --shapes 4096x65536,2048x131072

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


def composite_out(x, weight, eps, out_dtype):
    """The plain PyTorch RMSNorm given to torch.compile: float32 math, y stored in out_dtype."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps) * weight.float()).to(out_dtype)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", choices=DTYPES, default="bf16")
    p.add_argument("--out-dtype", choices=DTYPES, default="fp32")
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
    device = torch.device("cuda")
    copy = timing.copy_bandwidth(device)
    print(f"copy bandwidth {copy / 1e9:.0f} GB/s; RMSNorm forward, {args.dtype} x, {args.out_dtype} y, weight "
          f"{args.dtype}")
    peer = compiled(composite_out)
    for m, n in shapes:
        nbytes = m * n * (dtype.itemsize + out_dtype.itemsize)
        sets = [(torch.randn(m, n, device=device, dtype=dtype), torch.rand(n, device=device, dtype=dtype) + 0.5)
                for _ in range(timing.input_sets_needed(nbytes))]
        impls = {"normkit": lambda x, w: normkit.rms_norm(x, w, eps=1e-6, out_dtype=out_dtype),
                 "compile": lambda x, w: peer(x, w, 1e-6, out_dtype)}
        x, w = sets[0]
        if args.code:
            from torch._inductor.utils import run_and_get_code

            for source in run_and_get_code(peer, x, w, 1e-6, out_dtype)[1]:
                print(source)
        xd = x.double()
        want = xd * torch.rsqrt(xd.square().mean(dim=-1, keepdim=True) + 1e-6) * w.double()
        cells = []
        for name, fn in impls.items():
            error = (fn(x, w).double() - want).abs().max().item()
            with torch.cuda.stream(torch.cuda.Stream()):
                seconds = timing.graph_time([lambda s=s: fn(*s) for s in sets])
            cells.append(f"{name} {seconds * 1e6:.1f} us ({timing.percent_of_copy(nbytes, seconds, copy):.0f} %, "
                         f"max err {error:.1e})")
        print(f"{m}x{n}: " + ", ".join(cells), flush=True)
        del sets


if __name__ == "__main__":
    main()
