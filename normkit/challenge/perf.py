"""The performance case of the RMSNorm-backward challenge: N = 16384 rows, C = 4096, float32.

GPU time is the median of CUDA-graph replays (plain `do_bench` launches when the solution
cannot be captured in a graph). It is set against the device-to-device copy bandwidth measured
in the same run (an eager torch copy, see `copy_bandwidth`): the backward must move at least
3·N·C·4 bytes (read x and dy, write dx), so "% copy" = 3·N·C·4 / time / copy bandwidth. A
contestant's solution is also set against normkit's own kernel, timed in the same run.
"""

from typing import Callable, Optional, Tuple

import torch

from . import cases

N, C, EPS = 16384, 4096, 1e-5
NAME = f"perf-{N}x{C}"
COPY_BYTES = 1 << 30  # 1 GiB each way: far past the L2 (60 MB on an H200), so DRAM is measured


def _median_ms(fn: Callable[[], None]) -> Tuple[float, str]:
    """Median milliseconds per call of fn, and how they were measured."""
    import triton.testing

    try:
        return triton.testing.do_bench_cudagraph(fn, return_mode="median"), "CUDA graph"
    except Exception:  # e.g. a solution that synchronises, which graph capture refuses
        return triton.testing.do_bench(fn, return_mode="median"), "do_bench"


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read + written.

    Timed without a graph: captured in a CUDA graph, the copy becomes a memcpy node served by the
    copy engines, 2770 GB/s on an H200 against 4240 GB/s for the same copy_ launched eagerly.
    """
    import triton.testing

    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    ms = triton.testing.do_bench(lambda: dst.copy_(src), return_mode="median")
    return 2 * COPY_BYTES / (ms * 1e-3)


def _time(solve_fn: Callable, inputs: tuple, outputs: tuple) -> Tuple[float, str]:
    return _median_ms(lambda: solve_fn(*inputs, *outputs, N, C, EPS))


def run_performance(solve_fn: Callable, print_fn: Callable = print, timeout: Optional[float] = None,
                    baseline: Optional[Callable] = None, device=None) -> bool:
    """Check solve_fn at N×C once against float64 (within `timeout` s), then time it, and
    `baseline` (normkit's solve) in the same run when given; False only when it is wrong.

    `device` defaults to "cuda", the case being skipped without a GPU (tests pass "cpu" with the
    timers replaced).
    """
    if device is None:
        if not torch.cuda.is_available():
            print_fn(f"SKIP {NAME}: the performance case needs a CUDA GPU")
            return True
        device = "cuda"
    case = cases.Case(NAME, N, C, EPS, cases.correlated(N, C))
    result = cases.run_case(solve_fn, case, device, timeout)
    if not result.passed:
        print_fn(result.report())
        return False
    inputs = tuple(t.to(device) for t in case.inputs())
    outputs = (torch.empty_like(inputs[0]), torch.empty_like(inputs[1]))
    ms, method = _time(solve_fn, inputs, outputs)
    bandwidth = copy_bandwidth()
    moved = 3 * N * C * 4 / (ms * 1e-3)
    line = (f"PASS {result.name}: {ms * 1e3:.1f} µs ({method} median), {moved / 1e9:.0f} GB/s = "
            f"{100 * moved / bandwidth:.0f} % of copy bandwidth ({bandwidth / 1e9:.0f} GB/s)")
    if baseline is not None:
        baseline_ms, _ = _time(baseline, inputs, outputs)
        line += f", {ms / baseline_ms:.2f}× the time of normkit's kernel ({baseline_ms * 1e3:.1f} µs)"
    print_fn(line)
    return True
