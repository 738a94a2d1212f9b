"""Which clustered split launches finish? (run ZZZZZR `diag`; the patched tree on PYTHONPATH, a GPU.)

Run ZZZZZR's `checks` hung on tests/test_split_rows.py's 13th case (the backward, 300×4097 on 5 parts
of 1024, two rows a block) after the 7×1000 cases on 8 parts passed. Each case here runs in its own
process under a time limit (25 s) and prints its largest error against float64 or HANG, one variable at a
time: the parts (3, 4, 5, 8), rows a block (1, 2), row blocks a group (1; under the ring of 4; many:
the ring reused), the finisher after it (bwd: no weight, the split kernel alone; bwdw: weight and
dweight, the finisher a programmatic dependent launch after it), the forward, and (session 33) the
staged parts, whose waits spin a lane at a time in PTX. Session 33: on the first patch every case of ~40
row blocks a group hung (run ZZZZZR); with the warp's vote on the poll's count (cluster.warp_any) all 18
finish with the float64 answer (run ZZZZZS; tools/runs/device_zzzzzs.sh says why).

    python tools/runs/cluster_diag.py            # every case
    python tools/runs/cluster_diag.py CASE       # one case, in this process (what each child runs)
"""

import os
import subprocess
import sys

# name: (kind, m, n, block_n, block_m[, multiprocessors ops sizes the grid for: 5 = one group])
CASES = {
    "bwd 5p 1blk": ("bwd", 7, 4097, 1024, 1),
    "bwd 3p 1blk": ("bwd", 7, 3000, 1024, 1),
    "bwd 8p bm2 1blk": ("bwd", 14, 1000, 128, 2),
    "bwd 8p 3blk": ("bwd", 40, 1000, 128, 1),
    "bwd 8p 5blk": ("bwd", 72, 1000, 128, 1),
    "bwd 8p 40blk": ("bwd", 600, 1000, 128, 1),
    "bwd 4p 40blk": ("bwd", 1300, 4096, 1024, 1),
    "bwd 5p bm2 many": ("bwd", 300, 4097, 1024, 2),
    "bwdw 5p bm2 many": ("bwdw", 300, 4097, 1024, 2),
    "bwd 5p bm2 one group": ("bwd", 300, 4097, 1024, 2, 5),
    "bwd 8p one group": ("bwd", 60, 1000, 128, 1, 8),
    "fwd 8p 1blk": ("fwd", 7, 1000, 128, 1),
    "fwd 8p 40blk": ("fwd", 600, 1000, 128, 1),
    "fwd 5p bm2 many": ("fwd", 300, 4097, 1024, 2),
    # (session 33) the staged parts: their waits spin a lane at a time in PTX (stats._spin_receive)
    "bwd 8p 40blk staged": ("bwd", 600, 1000, 128, 1),
    "bwdw 5p bm2 many staged": ("bwdw", 300, 4097, 1024, 2),
    "fwd 8p 40blk staged": ("fwd", 600, 1000, 128, 1),
}


def run_case(name: str) -> str:
    import torch

    from normkit import config as cfg
    from normkit import ops

    kind, m, n, block_n, block_m, *sms = CASES[name]
    if sms:  # every row block through one cluster: the ring reused ~m / block_m times, no co-residency
        ops.multiprocessor_count = lambda device: sms[0]
    config = cfg.TileConfig(block_m, block_n, True, num_warps=4, programs_per_sm=1, split=True,
                            async_stages=3 if name.endswith("staged") else 0)
    g = torch.Generator().manual_seed(0)
    x64 = torch.randn(m, n, generator=g, dtype=torch.float64)
    w64 = 1 + 0.5 * torch.randn(n, generator=g, dtype=torch.float64)
    dy64 = torch.randn(m, n, generator=g, dtype=torch.float64)
    x, w, dy = (t.to("cuda", torch.float32) for t in (x64, w64, dy64))
    if kind == "bwd":  # no weight: no partials, no finisher (the split kernel alone)
        w, w64 = None, torch.ones(n, dtype=torch.float64)
    xr = x64.clone().requires_grad_()
    rstd64 = torch.rsqrt(xr.pow(2).mean(1, keepdim=True) + 1e-6)
    y64 = xr * rstd64 * w64
    if kind == "fwd":
        y = torch.full_like(x, float("nan"))
        ops.launch_fwd(x, y, weight=w, eps=1e-6, is_rms_norm=True, config=config)
        got, want = y, y64.detach()
    else:
        y64.backward(dy64)
        dx = torch.full_like(x, float("nan"))
        dw = torch.full_like(w, float("nan")) if kind == "bwdw" else None
        ops.launch_bwd(x, dy, dx, weight=w, dweight=dw, eps=1e-6, is_rms_norm=True, config=config)
        got, want = dx, xr.grad
    torch.cuda.synchronize()
    err = (got.double().cpu() - want).abs().max().item()
    if kind == "bwdw":
        err = max(err, (dw.double().cpu() - (dy64 * xr.detach() * rstd64.detach()).sum(0)).abs().max().item()
                  / max(1.0, m ** 0.5))
    return f"max |error| {err:.2e}"


def main(argv) -> int:
    if argv:
        print(run_case(" ".join(argv)), flush=True)
        return 0
    for name in CASES:
        for env in ({}, {"NORMKIT_CLUSTER_EXCHANGE": "0"}) if name == "bwd 5p bm2 many" else ({},):
            try:
                done = subprocess.run([sys.executable, __file__, *name.split()], capture_output=True, text=True,
                                      timeout=25, env={**os.environ, **env})
                line = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else \
                    f"ERROR rc {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
            except subprocess.TimeoutExpired:
                line = "HANG (25 s)"
            print(f"{name:20} {' '.join(f'{k}={v}' for k, v in env.items()):28} {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
