"""Timing helpers: minimum bytes, % of copy bandwidth, CUDA-graph GPU time, eager wall time.

GPU time of one call = (time of one replay of a CUDA graph holding K calls) / K, median (and p20,
p80) over several replays, timed with CUDA events after 0.1 s of untimed replays. Replaying a
graph removes the host (Python, dispatcher, launch) overhead, so the number is what the kernels
cost on the device. When the data of one call fits in the device's L2 the K calls rotate among
several input sets, so the timed calls read from HBM as they would in a model.

The ceiling is a large device-to-device copy measured in the same run: bytes read + written / time.
"% copy" = minimum bytes / time / copy bandwidth, with the minimum bytes of the pass: RMSNorm and
LayerNorm forward 2·M·N·s (read x, write y), backward 3·M·N·s (read x and dy, write dx); fused
residual add + RMSNorm 4·M·N·s both ways (forward: read x and residual, write y and residual_out;
backward: read residual_out, dy and dresidual_out, write dx); the fused LayerNorm as the fused add;
the gated RMSNorm forward 3·M·N·s (read x and gate, write y), backward 5·M·N·s (read x, gate and
dy, write dx and dgate).
"""

import functools
import math
import statistics
import time
from typing import Callable, List, Optional, Sequence, Tuple

import torch

# When the device does not say (CPU, older torch): an H200's 50 MB, the GPU normkit was tuned on
FALLBACK_L2_BYTES = 50 * 2**20
_ROTATION_L2S = 4  # rotate until the timed calls touch ≥ 4× L2: cold-ish reads
_MAX_INPUT_SETS = 16
_GRAPH_TARGET_S = 2e-3  # ~2 ms of work per replay: event resolution and launch cost vanish
# Replays before the timed ones, by wall time: right after its inputs were made (H200, RMSNorm bf16
# 131072×8192) the first ~70 ms of replays ran 9-11 % slow (1675-1703 µs a call), then steadily
# at the kernel's time (1533-1537 µs from 0.03 s on).
_WARMUP_S = 0.1
# Tensors of M×N elements a pass must move, per family (see the module docstring).
PASS_TENSORS = {"rms": {"fwd": 2, "bwd": 3}, "fused_add": {"fwd": 4, "bwd": 4},
                "layer_norm": {"fwd": 2, "bwd": 3}, "fused_layer_norm": {"fwd": 4, "bwd": 4},
                "gated": {"fwd": 3, "bwd": 5}}


def min_bytes(kind: str, m: int, n: int, element_size: int, family: str = "rms", out_element_size: int = 0,
              residual_element_size: int = 0) -> int:
    """Bytes a pass ("fwd"/"bwd") of `family` must move at least (parameters, rstd ignored): its M×N tensors
    of element_size bytes, but the forward's y of out_element_size and a fused forward's residual and
    residual_out of residual_element_size (0: element_size)."""
    nbytes = PASS_TENSORS[family][kind] * m * n * element_size
    if kind == "fwd":
        nbytes += m * n * ((out_element_size or element_size) - element_size)
        if family in ("fused_add", "fused_layer_norm"):
            nbytes += 2 * m * n * ((residual_element_size or element_size) - element_size)
    return nbytes


def percent_of_copy(nbytes: int, seconds: Optional[float], copy_bytes_per_s: Optional[float]
                    ) -> Optional[float]:
    """100 · (bytes / time) / copy bandwidth; None when a time or the bandwidth is missing."""
    if not seconds or not copy_bytes_per_s:
        return None
    return 100.0 * nbytes / seconds / copy_bytes_per_s


def l2_bytes(device: Optional[torch.device] = None) -> int:
    """L2 cache size of a CUDA device (the current one by default); FALLBACK_L2_BYTES without one."""
    if device is None:
        if not torch.cuda.is_available():
            return FALLBACK_L2_BYTES
        device = torch.device("cuda")
    device = torch.device(device)
    if device.type != "cuda":
        return FALLBACK_L2_BYTES
    return _cuda_l2_bytes(torch.cuda.current_device() if device.index is None else device.index)


@functools.lru_cache(maxsize=None)
def _cuda_l2_bytes(index: int) -> int:
    return getattr(torch.cuda.get_device_properties(index), "L2_cache_size", 0) or FALLBACK_L2_BYTES


def input_sets_needed(bytes_per_call: int, l2: Optional[int] = None) -> int:
    """How many input sets to rotate among so the timed calls do not run out of L2.

    `l2` is the cache size in bytes; by default the current device's (`l2_bytes`)."""
    if bytes_per_call <= 0:
        return 1
    footprint = _ROTATION_L2S * (l2_bytes() if l2 is None else l2)
    return max(1, min(_MAX_INPUT_SETS, math.ceil(footprint / bytes_per_call)))


def spread(times: Sequence[float]) -> Tuple[float, float, float]:
    """(p20, median, p80) of `times`, interpolated between samples; one sample gives it thrice."""
    if not times:
        raise ValueError("times must hold at least one value, got none")
    if len(times) == 1:
        return times[0], times[0], times[0]
    quintiles = statistics.quantiles(times, n=5, method="inclusive")
    return quintiles[0], statistics.median(times), quintiles[3]


def _event_time(fn: Callable[[], object], stream: torch.cuda.Stream) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    fn()
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) * 1e-3


def copy_bandwidth(device: torch.device, nbytes: int = 2**31, repeats: int = 30) -> float:
    """Device-to-device copy bandwidth in bytes/s: (bytes read + bytes written) / time, median.

    2 GiB each way: on an H200 a 256 MiB copy reaches ~3.9 TB/s, 1 GiB ~4.09, 2 GiB ~4.18 (median
    of 100). A kernel can beat the memcpy by a percent or two, so "% copy" may exceed 100.
    """
    nbytes = min(nbytes, torch.cuda.mem_get_info(device)[0] // 8)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_(0, 255)
    dst = torch.empty_like(src)
    stream = torch.cuda.current_stream(device)
    for _ in range(10):  # clocks up before the timed copies
        dst.copy_(src)
    times = [_event_time(lambda: dst.copy_(src), stream) for _ in range(repeats)]
    del src, dst
    return 2 * nbytes / statistics.median(times)


def graph_time(calls: Sequence[Callable[[], object]], replays: int = 10) -> float:
    """Seconds per call on the device: the median of `graph_times`."""
    return statistics.median(graph_times(calls, replays))


def graph_times(calls: Sequence[Callable[[], object]], replays: int = 10) -> List[float]:
    """Seconds per call on the device of each timed replay: CUDA graph of K calls (rotating over
    `calls`), replay time / K.

    Must run on a non-default stream (the caller's `torch.cuda.stream(...)`): capture happens on it,
    so backward closures whose forward ran on that same stream are captured too.
    """
    stream = torch.cuda.current_stream()
    if stream == torch.cuda.default_stream():
        raise RuntimeError("graph_time must run inside `with torch.cuda.stream(side_stream)`")
    for fn in calls:  # warm-up: JIT compilation, autotuning, lazy allocations happen here
        fn()
        fn()
    per_call = _event_time(lambda: [fn() for fn in calls], stream) / len(calls)
    k = max(len(calls), min(200, int(_GRAPH_TARGET_S / max(per_call, 1e-7))))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for i in range(k):
            calls[i % len(calls)]()
    graph.replay()
    deadline = time.perf_counter() + _WARMUP_S
    while time.perf_counter() < deadline:
        graph.replay()
        stream.synchronize()
    times = [_event_time(graph.replay, stream) / k for _ in range(replays)]
    del graph
    return times


def do_bench_time(fn: Callable[[], object]) -> float:
    """Fallback when graph capture fails: triton's do_bench (events, L2 flushed between calls)."""
    return do_bench_spread(fn)[1]


def do_bench_spread(fn: Callable[[], object]) -> Tuple[float, float, float]:
    """(p20, median, p80) seconds per call from triton's do_bench (the fallback of graph_times)."""
    import triton.testing

    p20, median, p80 = triton.testing.do_bench(fn, quantiles=[0.2, 0.5, 0.8])
    return p20 * 1e-3, median * 1e-3, p80 * 1e-3


def loop_times(fn: Callable[[], object], device: torch.device, calls: int, repeats: int, warmup: int
               ) -> List[float]:
    """Eager seconds per call, host + device, of each of `repeats` loops: `calls` calls back to back,
    one synchronize, the host clock around both; after `warmup` calls and a synchronize."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        times.append((time.perf_counter() - start) / calls)
    return times


def wall_time(fn: Callable[[], object], device: torch.device, min_seconds: float = 0.05,
              min_calls: int = 10) -> float:
    """Eager seconds per call, host + device: calls back to back, one synchronize at the end."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    fn()
    fn()
    sync()
    calls, start = 0, time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < min_seconds:
        fn()
        calls += 1
        if calls >= 100_000:
            break
    sync()
    return (time.perf_counter() - start) / calls
