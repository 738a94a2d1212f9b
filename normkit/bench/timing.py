"""Timing helpers: minimum bytes, % of copy bandwidth, CUDA-graph GPU time, eager wall time.

GPU time of one call = (time of one replay of a CUDA graph holding K calls) / K, median over
several replays, timed with CUDA events after 0.1 s of untimed replays. Replaying a graph removes
the host (Python, dispatcher, launch) overhead, so the number is what the kernels cost on the
device. When the data of one call fits in L2 the K calls rotate among several input sets, so the
timed calls read from HBM as they would in a model.

The ceiling is a large device-to-device copy measured in the same run: bytes read + written / time.
"% copy" = minimum bytes / time / copy bandwidth, with the minimum bytes of the pass (as in
ANCHORS.md): RMSNorm and LayerNorm forward 2·M·N·s (read x, write y), backward 3·M·N·s (read x
and dy, write dx); fused residual add + RMSNorm 4·M·N·s both ways (forward: read x and residual,
write y and residual_out; backward: read residual_out, dy and dresidual_out, write dx); the fused
LayerNorm as the fused add.
"""

import math
import statistics
import time
from typing import Callable, Optional, Sequence

import torch

L2_BYTES = 50 * 2**20  # H200: 50 MB of L2; a working set below this would be timed from cache
_ROTATION_FOOTPRINT = 4 * L2_BYTES  # rotate until the timed calls touch ≥ 4× L2: cold-ish reads
_MAX_INPUT_SETS = 16
_GRAPH_TARGET_S = 2e-3  # ~2 ms of work per replay: event resolution and launch cost vanish
# Replays before the timed ones, by wall time: right after its inputs were made (bench inputs,
# RMSNorm bf16 131072×8192) a process ran its first ~70 ms of replays 9-11 % slow and then steadily
# at the kernel's time (run ZZZS3: 1675-1703 µs a call, then 1533-1537 from 0.03 s on), which the ten
# timed replays had sat inside (BENCHMARKS "Session 18").
_WARMUP_S = 0.1
# Tensors of M×N elements a pass must move, per family (see the module docstring).
PASS_TENSORS = {"rms": {"fwd": 2, "bwd": 3}, "fused_add": {"fwd": 4, "bwd": 4},
                "layer_norm": {"fwd": 2, "bwd": 3}, "fused_layer_norm": {"fwd": 4, "bwd": 4}}


def min_bytes(kind: str, m: int, n: int, element_size: int, family: str = "rms") -> int:
    """Bytes a pass ("fwd"/"bwd") of `family` must move at least (parameters, rstd ignored)."""
    return PASS_TENSORS[family][kind] * m * n * element_size


def percent_of_copy(nbytes: int, seconds: Optional[float], copy_bytes_per_s: Optional[float]
                    ) -> Optional[float]:
    """100 · (bytes / time) / copy bandwidth; None when a time or the bandwidth is missing."""
    if not seconds or not copy_bytes_per_s:
        return None
    return 100.0 * nbytes / seconds / copy_bytes_per_s


def input_sets_needed(bytes_per_call: int) -> int:
    """How many input sets to rotate among so the timed calls do not run out of L2."""
    if bytes_per_call <= 0:
        return 1
    return max(1, min(_MAX_INPUT_SETS, math.ceil(_ROTATION_FOOTPRINT / bytes_per_call)))


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
    """Seconds per call on the device: CUDA graph of K calls (rotating over `calls`), median replay / K.

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
    times = [_event_time(graph.replay, stream) for _ in range(replays)]
    del graph
    return statistics.median(times) / k


def do_bench_time(fn: Callable[[], object]) -> float:
    """Fallback when graph capture fails: triton's do_bench (events, L2 flushed between calls)."""
    import triton.testing

    return triton.testing.do_bench(fn, return_mode="median") * 1e-3


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
