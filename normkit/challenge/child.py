"""The solution's side of grading: call it on the inputs received, send back what it left.

`main` is the body of the spawned process that holds a contestant's file (`sandbox.Isolated`):
it loads the file and answers the grader's jobs over a pipe until the pipe closes. It never
receives expected values and judges nothing. `handle` does one job; `sandbox.InProcess` calls it
directly for trusted callables.

Jobs (header "kind"):
- "backward": solve(x, weight, dy, dx, dweight, N, C, eps) on copies of the inputs, the outputs
  pre-filled and padded with FILL; back come the padded outputs, the inputs as solve left them,
  which outputs it replaced, and (with "time") the median milliseconds of further calls.
- "forward": run(M=, N=, eps=) with Triton's launches watched; back come its return value's
  repr and, per launch, the kernel's name and file, its tensor arguments' before/after flags and
  float32 values, and what the launch wrote when replayed on the grader's probe inputs.
"""

import contextlib
import os
import sys
import traceback
from typing import Callable, List, Tuple

import torch

from . import wire

TRACE_FRAMES = 3  # how many of the innermost frames a crash report shows
MAX_LAUNCHES = 16  # Triton launches of a forward run that are recorded
MAX_SENT_ARGS = 8  # (M, N) or (N,) float32 arguments sent back per launch
_PLUMBING = {os.path.join(os.path.dirname(os.path.abspath(__file__)), name) for name in ("child.py", "solution.py")}


def _harness_frame(filename: str) -> bool:
    """Frames of the grader's own plumbing (this file, the solution loader, importlib)."""
    return filename.startswith("<frozen ") or filename in _PLUMBING


def format_trace(error: BaseException) -> str:
    """The innermost TRACE_FRAMES frames of error's traceback, the grader's own left out, and
    the error line(s) (with the file, line and caret of a SyntaxError)."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if not _harness_frame(frame.filename)]
    lines = traceback.format_list(frames[-TRACE_FRAMES:]) + traceback.format_exception_only(error)
    return "".join(lines).rstrip()


def _call(fn: Callable, device: torch.device, *args, **kwargs) -> Tuple[object, dict]:
    """fn(*args, **kwargs), then a device synchronize (asynchronous work counts as the call's)."""
    try:
        value = fn(*args, **kwargs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return value, {"status": "returned"}
    except (Exception, SystemExit) as error:  # SystemExit too: a solution must not end the grading
        return None, {"status": "raised", "error": f"{type(error).__name__}: {error}", "trace": format_trace(error)}


# ----------------------------------------------------------------------------- backward
def _layout(tensor: torch.Tensor) -> tuple:
    return tensor.data_ptr(), tuple(tensor.shape), tensor.stride(), tensor.dtype, tensor.device


def _backward(fn: Callable, job: dict, inputs: wire.Tensors) -> Tuple[dict, wire.Tensors]:
    device, n, c, eps = torch.device(job["device"]), job["n"], job["c"], job["eps"]
    x, weight, dy = (inputs[name].to(device, copy=True) for name in ("x", "weight", "dy"))
    buffers, outputs = {}, {}
    for name, shape in (("dx", (n, c)), ("dweight", (c,))):
        numel = n * c if name == "dx" else c
        buffers[name] = torch.full((2 * job["guard"] + numel,), job["fill"], device=device)
        outputs[name] = buffers[name][job["guard"]:job["guard"] + numel].view(shape)
    layouts = {name: _layout(tensor) for name, tensor in outputs.items()}
    _, reply = _call(fn, device, x, weight, dy, outputs["dx"], outputs["dweight"], n, c, eps)
    reply["replaced"] = [name for name, tensor in outputs.items() if _layout(tensor) != layouts[name]]
    left = {"dx_buffer": buffers["dx"].cpu(), "dweight_buffer": buffers["dweight"].cpu(),
            "x": x.cpu(), "weight": weight.cpu(), "dy": dy.cpu()}
    if job.get("time") and reply["status"] == "returned":
        from . import perf

        args = (x, weight, dy, outputs["dx"], outputs["dweight"], n, c, eps)
        timing, status = _call(perf.median_ms, device, lambda: fn(*args))
        if status["status"] == "returned":
            reply["ms"], reply["method"] = timing
        else:
            reply["time_error"] = status["error"]
    return reply, left


# ----------------------------------------------------------------------------- forward
_LAUNCHERS: dict = {}  # Triton's own launch entry points, as they were before the solution's file ran


def keep_launchers() -> None:
    """Note Triton's launch entry points before a solution's file runs: a file that replaces them
    (to do the work in torch inside a "launch") cannot stand between a launch and the watcher."""
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import GridExecutor
        from triton.runtime.jit import JITFunction

        _LAUNCHERS.update({(JITFunction, "run"): JITFunction.run, (GridExecutor, "__call__"): GridExecutor.__call__})


def _replay(original, launcher, args: tuple, kwargs: dict, befores: dict, swaps: list) -> dict:
    """Run a launch again on clones of its tensor arguments as they were before it, those equal to
    the statement's x or weight replaced by the grader's probes; {id(argument): value after}."""
    stand_ins = {}
    for key, before in befores.items():
        stand_ins[key] = before.clone()
        for statement, probe in swaps:
            if (before.dtype == statement.dtype and before.numel() == statement.numel()
                    and torch.equal(before.flatten(), statement.flatten())):
                stand_ins[key].copy_(probe.reshape(before.shape))

    def swap(value):
        return stand_ins.get(id(value), value) if isinstance(value, torch.Tensor) else value

    original(launcher, *map(swap, args), **{name: swap(value) for name, value in kwargs.items()})
    return {key: stand_in.detach().clone() for key, stand_in in stand_ins.items()}


@contextlib.contextmanager
def _watching_launches(swaps: list):
    """Record each Triton launch's tensor arguments, cloned just before and just after it, then
    replay it (`_replay`): compiled launches at `JITFunction.run`, interpreted ones at
    `GridExecutor.__call__`, where every Triton version's interpreter (3.4's `fn[grid]` does not
    pass through `InterpretedFunction.run`) runs a grid. The wrapped entry points are Triton's own
    (`keep_launchers`), whatever the solution's file put in their place."""
    from triton.runtime.interpreter import GridExecutor
    from triton.runtime.jit import JITFunction

    launches: List[tuple] = []
    present = {(JITFunction, "run"): JITFunction.run, (GridExecutor, "__call__"): GridExecutor.__call__}

    def watched(original):
        def run(self, *args, **kwargs):
            if kwargs.get("warmup") or len(launches) >= MAX_LAUNCHES:
                return original(self, *args, **kwargs)
            names = list(getattr(self, "arg_names", None) or [])
            named = [(names[i] if i < len(names) else f"arg{i}", value) for i, value in enumerate(args)]
            tensors = [(name, value) for name, value in named + list(kwargs.items()) if isinstance(value, torch.Tensor)]
            befores = {id(value): value.detach().clone() for _, value in tensors}
            result = original(self, *args, **kwargs)
            after = [value.detach().clone() for _, value in tensors]
            try:
                replayed = _replay(original, self, args, kwargs, befores, swaps)
            except Exception as error:  # reported: the grader fails a launch it could not replay
                replayed = f"{type(error).__name__}: {error}"
            fn = getattr(self, "fn", None)
            kernel = getattr(fn, "__name__", None) or "kernel"
            file = getattr(getattr(fn, "__code__", None), "co_filename", None)
            launches.append((kernel, file, [(name, befores[id(value)], a, replayed if isinstance(replayed, str)
                                             else replayed[id(value)]) for (name, value), a in zip(tensors, after)]))
            return result
        return run

    for (cls, name), value in present.items():
        setattr(cls, name, watched(_LAUNCHERS.get((cls, name), value)))
    try:
        yield launches
    finally:
        for (cls, name), value in present.items():
            setattr(cls, name, value)


def _same_bits(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Bitwise equality: a buffer the launch left alone is unchanged even where it holds NaNs (an
    uninitialised `torch.empty` often does), which torch.equal calls unequal."""
    return before.reshape(-1).view(torch.uint8).equal(after.reshape(-1).view(torch.uint8))


def _describe(value) -> dict:
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    try:
        text = repr(value)
    except Exception as error:  # a repr that raises is the solution's, not the grader's, problem
        text = f"<repr raised {type(error).__name__}>"
    return {"is_true": value is True, "repr": text[:200], "type": name}


def _forward(fn: Callable, job: dict, inputs: wire.Tensors) -> Tuple[dict, wire.Tensors]:
    from .forward import inputs as statement_inputs

    device, m, n = torch.device(job["device"]), job["m"], job["n"]
    swaps = [(given.to(device), inputs[name].to(device))
             for name, given in zip(("x", "weight"), statement_inputs(m, n)) if name in inputs]
    with _watching_launches(swaps) as launches:
        value, reply = _call(fn, device, M=m, N=n, eps=job["eps"])
    reply["value"] = _describe(value)
    reply["launches"], tensors = [], {}
    for i, (kernel, file, args) in enumerate(launches):
        entries = []
        for j, (name, before, after, replayed) in enumerate(args):
            entries.append({"name": str(name), "shape": list(after.shape), "dtype": str(after.dtype),
                            "changed": not _same_bits(before, after)})
            sent = sum(key.startswith(f"{i}.") and not key.endswith(".replay") for key in tensors)
            if after.dtype == torch.float32 and after.numel() in (m * n, n) and sent < MAX_SENT_ARGS:
                tensors[f"{i}.{j}"] = after.cpu()
                if entries[-1]["changed"] and not isinstance(replayed, str):
                    tensors[f"{i}.{j}.replay"] = replayed.cpu()
        replay_error = next((replayed for *_, replayed in args if isinstance(replayed, str)), None)
        reply["launches"].append({"kernel": str(kernel), "file": str(file), "args": entries,
                                  **({"replay_error": replay_error[:300]} if replay_error else {})})
    return reply, tensors


def forward_reply_elements(m: int, n: int) -> int:
    """The most elements a forward reply holds (what the grader accepts): each argument sent,
    and as much again for the replays."""
    return 2 * MAX_LAUNCHES * MAX_SENT_ARGS * (m * n)


def handle(fn: Callable, job: dict, inputs: wire.Tensors) -> Tuple[dict, wire.Tensors]:
    """Do one job (see the module docstring); returns the reply's header and tensors."""
    if job["kind"] == "backward":
        return _backward(fn, job, inputs)
    if job["kind"] == "forward":
        return _forward(fn, job, inputs)
    raise ValueError(f"unknown job kind {job['kind']!r}")


# ----------------------------------------------------------------------------- the process
def _redirect_output(path: str) -> None:
    """Send what the solution prints (fds 1 and 2) to the grader's log file, a line at a time."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    for stream, target in ((sys.stdout, 1), (sys.stderr, 2)):
        if stream is not None:
            stream.flush()
        os.dup2(fd, target)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


def main(conn, spec: dict) -> None:
    """The solution's process: say "ready", load spec["path"], then answer jobs until EOF."""
    from .solution import SolutionError, load_solution

    if hasattr(os, "setpgid"):
        os.setpgid(0, 0)  # a group of its own: the grader's kill reaches what the solution starts
    _redirect_output(spec["output"])
    keep_launchers()
    wire.send(conn, {"status": "ready"})
    try:
        fn = load_solution(spec["path"], spec["function"], spec["call"])
    except SolutionError as error:
        wire.send(conn, {"status": "load-error", "error": str(error)})
        return
    wire.send(conn, {"status": "loaded"})
    while True:
        try:
            job, inputs = wire.receive(conn)
        except EOFError:
            return
        wire.send(conn, *handle(fn, job, inputs))
