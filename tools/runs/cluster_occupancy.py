"""How many clusters of the split parts an H200 holds at once, against how many the launch asks for
(run ZZZZZS `occupancy`; the cluster patch on PYTHONPATH, a GPU).

Run ZZZZZS's `ab` found the cluster exchange 25-37 % slower where it clusters 8 parts a row. The grid
is sized so that every program is resident (config.backward_grid with the kernel's own occupancy);
a cluster must fit in one GPC, so fewer may fit than programs / parts — a second wave. This asks the
driver (cuOccupancyMaxActiveClusters, through Triton's utils) for each launch of the A/B's shapes.

    python tools/runs/cluster_occupancy.py
"""

import torch

from normkit import launch, ops

SHAPES = [("bwd", "rms", 4096, 16384), ("bwd", "rms", 8192, 32768), ("bwd", "layer_norm", 4096, 16384),
          ("fwd", "layer_norm", 4096, 65536), ("fwd", "rms", 2048, 131072)]


def main() -> None:
    import triton

    utils = triton.runtime.driver.active.utils
    seen = []

    def clustered(fn, grid_for, *args, cluster, extra_shared, **kwargs):
        kernel = fn.warmup(*args, grid=(1,), **kwargs)
        kernel.run  # loads it
        grid = launch.launch_clustered(fn, grid_for, *args, cluster=cluster, extra_shared=extra_shared, **kwargs)
        fits = utils.cuOccupancyMaxActiveClusters(kernel.function, kernel.metadata.shared + extra_shared, cluster)
        seen.append((grid[0] // cluster, cluster, fits, kernel.n_regs, kernel.metadata.shared + extra_shared))
        return grid

    ops.launch_clustered = clustered
    for kind, family, m, n in SHAPES:
        rms = family == "rms"
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        w = torch.ones(n, device="cuda", dtype=torch.bfloat16)
        rstd = torch.empty(m, device="cuda")
        mean = None if rms else torch.empty(m, device="cuda")
        seen.clear()
        ops.launch_fwd(x, torch.empty_like(x), weight=w, mean=mean, rstd=rstd, eps=1e-6, is_rms_norm=rms)
        if kind == "bwd":  # (its statistics from the forward above; the last clustered launch is reported)
            ops.launch_bwd(x, x, torch.empty_like(x), weight=w, dweight=torch.empty_like(w), mean=mean, rstd=rstd,
                           eps=1e-6, is_rms_norm=rms)
        torch.cuda.synchronize()
        for clusters, size, fits, regs, shared in seen[-1:]:
            print(f"{kind} {family} {m}x{n}: {clusters} clusters of {size} launched, {fits} fit at once "
                  f"({regs} registers, {shared} B shared a CTA)", flush=True)
        if not seen:
            print(f"{kind} {family} {m}x{n}: no clustered launch", flush=True)


if __name__ == "__main__":
    main()
