"""`bench --model --profile`: where a training step's GPU time goes, per variant and mode.

torch.profiler traces a few steps after the timed ones, one step a trace, the variants of a mode in
rounds as their timed steps were; each kernel's self time is summed and divided by the steps. Kernels
are grouped by name (`GROUPS`) so that variants whose kernels are named differently (Inductor names its
fusions after the ops they hold) still line up: the groups table shows where a compiled patched model
gains or loses against compiled stock, the top kernels which kernels; --json keeps every kernel.
Without a GPU the same is done for the CPU ops (plumbing only).
"""

from collections import defaultdict
from typing import Callable, Dict, List, Sequence

import torch

from . import output

STEPS = 3  # after the timed steps, so nothing compiles inside the trace; 3 average out the launch jitter
TOP = 12  # kernels printed per run (the JSON has all)
# (group, name prefix, name fragments): the first whose prefix and one fragment match; normkit's and Liger's
# Triton kernels before Inductor's
GROUPS = (
    ("normkit", "", ("norm_fwd_kernel", "norm_bwd_kernel", "sum_partials_kernel", "normkit::", "NormFunction")),
    ("liger", "", ("_rms_norm_forward_kernel", "_rms_norm_backward_kernel")),
    # Inductor names a fusion after its aten ops: an RMSNorm's forward holds rsqrt, its backward pow (d x²/dx),
    # no other op of these layers does (but Qwen3-Next's q/k l2norm, rsqrt); fused neighbours (residual add) count
    ("inductor: norm", "triton_", ("rsqrt", "pow", "native_layer_norm", "_rms_norm")),
    ("inductor: rest", "triton_", ("",)),
    ("matmul", "", ("gemm", "nvjet", "cutlass", "xmma", "cublas", "matmul", "::mm", "addmm", "bmm")),
    ("attention", "", ("flash", "fmha", "attention", "cudnn")),
    ("optimizer", "", ("multi_tensor_apply", "adam")),
    ("other", "", ("",)),
)


def group_of(name: str) -> str:
    lowered = name.lower()
    return next(group for group, prefix, fragments in GROUPS
                if lowered.startswith(prefix) and any(f.lower() in lowered for f in fragments))


def record(step: Callable[[], object], device: torch.device, kernels: Dict[str, List[float]]) -> None:
    """Trace one call of `step`; add each kernel's calls and self µs to `kernels` (name → [calls, µs])."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    on_gpu = device.type == "cuda"
    with torch_profile(activities=[ProfilerActivity.CUDA if on_gpu else ProfilerActivity.CPU]) as trace:
        step()
        if on_gpu:
            torch.cuda.synchronize(device)
    attribute = "self_device_time_total" if on_gpu else "self_cpu_time_total"
    for event in trace.key_averages():
        if getattr(event, attribute) > 0:
            calls_us = kernels.setdefault(event.key, [0, 0.0])
            calls_us[0] += event.count
            calls_us[1] += getattr(event, attribute)


def summary(kernels: Dict[str, List[float]], steps: int, device: torch.device) -> Dict:
    """{"steps", "clock", "total_us", "groups": {group: µs a step}, "kernels": every kernel by µs a step}."""
    rows = sorted(({"name": name, "group": group_of(name), "calls": calls / steps, "us": us / steps}
                   for name, (calls, us) in kernels.items()), key=lambda k: -k["us"])
    groups: Dict[str, float] = defaultdict(float)
    for kernel in rows:
        groups[kernel["group"]] += kernel["us"]
    return {"steps": steps, "clock": "GPU" if device.type == "cuda" else "CPU",
            "total_us": sum(k["us"] for k in rows), "groups": {g: groups[g] for g, *_ in GROUPS if g in groups},
            "kernels": rows}


def _ms(us: float) -> str:
    return f"{us / 1e3:.2f}"


def render(rows: Sequence[Dict]) -> str:
    """Per mode, ms a step by kernel group across variants; then each run's top kernels."""
    profiled = [r for r in rows if r.get("profile")]
    if not profiled:
        return "Profile: no run completed."
    sections = []
    for mode in dict.fromkeys(r["mode"] for r in profiled):
        runs = [r for r in profiled if r["mode"] == mode]
        clock = runs[0]["profile"]["clock"]
        names = [g for g, *_ in GROUPS if any(g in r["profile"]["groups"] for r in runs)]
        table = [[g, *(_ms(r["profile"]["groups"].get(g, 0.0)) for r in runs)] for g in names]
        table.append(["total", *(_ms(r["profile"]["total_us"]) for r in runs)])
        sections.append(f"Profile ({mode}): {clock} ms a step by kernel group, mean of {runs[0]['profile']['steps']} "
                        f"steps\n" + output.text_table(["group", *(r["impl"] for r in runs)], table))
    for r in profiled:
        title = f"Top kernels: {r['impl']} {r['mode']} ({r['profile']['clock']} µs a step)"
        sections.append(title + "\n" + output.text_table(["kernel", "group", "calls", "µs", "share"],
                                                         _kernel_rows(r["profile"])))
    return "\n\n".join(sections)


def _kernel_rows(result: Dict) -> List[List[str]]:
    total = result["total_us"] or 1.0
    return [[k["name"] if len(k["name"]) <= 80 else k["name"][:77] + "...", k["group"], f"{k['calls']:g}",
             f"{k['us']:.0f}", f"{100 * k['us'] / total:.1f} %"] for k in result["kernels"][:TOP]]
