"""The compile-time launch path: under torch.compile, Inductor's generated code launches normkit's kernels
itself (docs/design.md#launch-path).

`normkit::norm_fwd_triton` and `normkit::norm_bwd_triton` are `torch.library.triton_op`s with the
signatures of the opaque `normkit::norm_fwd` / `norm_bwd` (`normkit.ops`). Their body runs once, at trace
time: it allocates the outputs with torch.empty, picks the tile and builds each launch's arguments as an
eager call does (`normkit.arguments`), and launches the kernels through `torch.library.wrap_triton`, so
the graph holds `triton_kernel_wrapper_*` nodes and no normkit Python runs per step. Differences from an
eager launch:
- no programmatic dependent launch (Inductor launches kernels without launch options): the backward's
  LAUNCH_DEPENDENTS and the finisher's USE_PDL are off;
- dweight and dbias are summed by one finisher launch each, from partial buffers of their own (one
  buffer and one launch for both would pass overlapping tensors to a kernel that writes them);
- a tile that fails to compile falls back at trace time (`variant.run_compiled`): on a GPU each launch is
  compiled there (`launch.build`), which also gives the backward's persistent grid its residency.

A symbolic row count M (`mark_dynamic`, `dynamic=True` with the weight a module's parameter, or Dynamo's
automatic dynamic shapes after a second M) traces too: the grids, the kernels' M and partial buffers that
follow the grid are symbolic, and what M decides becomes a guard true of every large M — M ≥ BLOCK_M and
row blocks > slots (the backward's grid is every slot) —, smaller M guarding on the power of two they fall
below (2 ≤ M ≤ 4 the smallest range: `arguments.rows_to_fit`). LayerNorm's EVEN_ROWS is on only where no guard
is needed (BLOCK_M = 1).

The body calls the opaque op instead where this path cannot express the launch: a symbolic N, parameter
shape or stride, M = 0, split-row tiles (every program resident, an exchange buffer zeroed per call),
tiles with a register cap (`maxnreg`), the CPU reference path, and float64 outputs the interpreter stages.

Opt-in (`ops.set_compile_ops("triton")`, NORMKIT_COMPILE_OPS=triton) until it has run on a GPU.
`normkit.ops` imports this module while Dynamo traces its first norm in that mode, which registers the
triton ops: eager use never imports Triton early (TRITON_INTERPRET may be set after `import normkit`) nor
Inductor's helpers (about a second).
"""

import functools
import inspect
from typing import List, Optional, Tuple

import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true

from . import config as cfg
from . import reference
from ._runtime import interpret, interpreter_rounds_to_nearest, kernels, multiprocessor_count, uses_triton
from .arguments import (bwd_arguments, bwd_flags, bwd_grid, bwd_tile, finish_arguments, fwd_arguments, fwd_flags,
                        fwd_tile, head_count, rows_to_fit)
from .launch import build, launch
from .variant import FALLBACK_BWD, FALLBACK_FWD, run_compiled

Tensor = torch.Tensor

# ----------------------------------------------------------------------------- the kernels wrap_triton takes
# What each kernel writes: torch's analysis of a kernel's TTIR finds these parameters on a GPU (checked there:
# tests/test_compile_ops.py); under Triton's interpreter it cannot lower the kernel to TTIR and would take every
# input as written (a copy of each a call, and AOTAutograd then returned a prenorm residual_out in its 2-D
# shape), so normkit answers for its own interpreted kernels from this table (`_answer_for_the_interpreter`).
WRITES = {"norm_fwd_kernel": ("Y", "RESIDUAL_OUT", "MEAN", "RSTD", "XCHG"),
          "norm_bwd_kernel": ("DX", "DW_PARTIAL", "DB_PARTIAL", "DGATE", "XCHG"),
          "sum_partials_kernel": ("OUT", "OUT2")}


def written(kernel, kwargs: dict) -> List[str]:
    """The tensor arguments of a launch of `kernel` that WRITES says it writes."""
    names = WRITES[getattr(kernel, "fn", kernel).__name__]
    return [name for name, value in kwargs.items() if name in names and isinstance(value, Tensor)]


@functools.lru_cache(maxsize=None)
def traceable(kernel):
    """What wrap_triton takes for `kernel`: the kernel itself on a GPU; under Triton's interpreter a
    JITFunction of the same Python function whose launches run interpreted (`launch.launch`). wrap_triton
    traces JITFunctions only: torch 2.11 refuses an InterpretedFunction and 2.13 returns it unwrapped."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    if not isinstance(kernel, InterpretedFunction):
        return kernel

    class Interpreted(JITFunction):
        normkit_interpreted = True

        @property
        def cache_key(self) -> str:  # (the helpers it calls are interpreted: Triton's hash refuses them)
            return f"normkit-interpreted:{self.fn.__qualname__}"

        # (Dynamo never traces the interpreter: a graph that breaks at the launch, compiled autograd's, runs it)
        @torch.compiler.disable
        def run(self, *args, grid, warmup, **options):
            if not warmup:  # (num_warps, num_stages: the interpreter has no use for them)
                launch(kernel, grid, *args, **{k: v for k, v in options.items() if k in self.arg_names})

    _answer_for_the_interpreter()
    return Interpreted(kernel.fn)


def _answer_for_the_interpreter() -> None:
    """torch's write analysis answered from WRITES for normkit's interpreted kernels, left to torch for every
    other kernel (installed once, only where the interpreter runs normkit's kernels)."""
    from torch._higher_order_ops import triton_kernel_wrap

    analyse = triton_kernel_wrap.get_mutated_tensors
    if getattr(analyse, "normkit", False):
        return

    def get_mutated_tensors(kernel_idx, constant_args_idx, kwargs, *rest):
        kernel = triton_kernel_wrap.kernel_side_table.get_kernel(kernel_idx)  # (an Autotuner around it: launch options)
        if any(getattr(k, "normkit_interpreted", False) for k in (kernel, getattr(kernel, "fn", None))):
            return written(getattr(kernel, "fn", kernel), kwargs)
        return analyse(kernel_idx, constant_args_idx, kwargs, *rest)

    get_mutated_tensors.normkit = True
    triton_kernel_wrap.get_mutated_tensors = get_mutated_tensors


def _every_argument(kernel, args: tuple, options: dict) -> dict:
    """The launch's arguments by name, the kernel's defaults included: torch's analysis of what a kernel writes
    (`generate_ttir`) binds every parameter, and where it cannot, it takes every input tensor as written (a copy
    of each a call, and outputs that alias them lost under AOTAutograd)."""
    every = dict(zip(kernel.arg_names, args), **options)
    every.update((p.name, p.default) for p in kernel.params
                 if p.name not in every and p.default is not inspect.Parameter.empty)
    return every


def _launch_all(launches: list) -> None:
    for kernel, grid, args, options in launches:
        wrapped = traceable(kernel)
        torch.library.wrap_triton(wrapped)[grid](**_every_argument(wrapped, args, options))


def _apart(tensors) -> tuple:
    """The buffers the kernels write, no two from identical allocation calls: AOTAutograd's CSE merges
    identical allocations (out and residual_out were one empty_like in the graph), though both are written."""
    return tuple(None if t is None else torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
                 if i % 2 else t for i, t in enumerate(tensors))


def _static_but_rows(rows, parameters) -> bool:
    """Whether only row counts are symbolic: every stride, every size of the parameters and of the rows' other
    dimensions (N) are ints. A symbolic N or stride would pick the tile and the constexprs from a guess."""
    return (all(type(d) is int for t in rows if t is not None for d in (*t.shape[1:], *t.stride()))
            and all(type(d) is int for t in parameters if t is not None for d in (*t.shape, *t.stride())))


def _even_rows(m, block_m: int) -> bool:
    """Whether BLOCK_M divides M; a symbolic M only where it holds for every M (BLOCK_M = 1), without a guard."""
    return m % block_m == 0 if type(m) is int else statically_known_true(m % block_m == 0)


def _expressible(config: cfg.TileConfig) -> bool:
    """Split rows need every program resident and zeroed exchange slots; wrap_triton takes no maxnreg."""
    return not config.split and not config.max_registers


def _takes(x: Tensor, rows: tuple, parameters: tuple) -> bool:
    """Whether this path launches for these tensors (module docstring), before the tile is known."""
    return (x.shape[0] != 0 and uses_triton(x.device) and _static_but_rows((x, *rows), parameters)
            and not (x.dtype == torch.float64 and interpret() and not interpreter_rounds_to_nearest()))


def _built(kernel, args: tuple, options: dict):
    """The compiled kernel a launch selects (tensors by their dtype), None under the interpreter. A symbolic
    int is compiled as Inductor compiles it (an i32 neither 1 nor a multiple of 16): 17 stands in."""
    return build(kernel, *(a.dtype if isinstance(a, Tensor) else 17 if isinstance(a, torch.SymInt) else a
                           for a in args), **options)


# ----------------------------------------------------------------------------- forward
def fwd_launches(x, out, residual_out, mean, rstd, weight, bias, residual, gate, eps, weight_offset, is_rms_norm,
                 x_hat_dtype) -> Optional[list]:
    """[(kernel, grid, args, options)] of the forward, None where the opaque op takes the call."""
    if not _takes(x, (out, residual_out, residual, gate), (weight, bias)):
        return None
    m, n = x.shape
    weight, bias = weight if weight is None else weight.contiguous(), bias if bias is None else bias.contiguous()
    heads = head_count(weight, bias)
    config = fwd_tile(x, out, weight, bias, residual, residual_out, gate, is_rms_norm, heads,
                      multiprocessor_count(x.device))
    if not _expressible(config):
        return None
    flags = fwd_flags(x, weight, bias, residual, residual_out, rstd, gate, is_rms_norm, x_hat_dtype, weight_offset)
    launches = []

    def run(config: cfg.TileConfig) -> None:
        tensors, tail, options = fwd_arguments(config, x, out, weight, bias, residual, residual_out, mean, rstd,
                                               gate, heads, float(eps), float(weight_offset), flags,
                                               _even_rows(m, config.block_m))
        args = (*tensors, None, *tail)
        _built(kernels().norm_fwd_kernel, args, options)
        launches[:] = [(kernels().norm_fwd_kernel, (cfg.cdiv(m, config.block_m),), args, options)]

    run_compiled(run, config, cfg.fit_block_m(FALLBACK_FWD, rows_to_fit(m)), lambda: ("fwd", flags, x.dtype, out.dtype))
    return launches


def _norm_fwd_triton(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], residual: Optional[Tensor],
                     eps: float, weight_offset: float, is_rms_norm: bool, store_stats: bool,
                     out_dtype: Optional[torch.dtype], residual_dtype: Optional[torch.dtype],
                     x_hat_dtype: Optional[torch.dtype], gate: Optional[Tensor] = None
                     ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    from . import ops

    outputs = _apart(ops._fwd_outputs(x, residual, is_rms_norm, store_stats, out_dtype, residual_dtype))
    out, residual_out, mean, rstd = outputs
    launches = fwd_launches(x, out, residual_out, mean, rstd, weight, bias, residual, gate, eps, weight_offset,
                            is_rms_norm, x_hat_dtype)
    if launches is None:
        return torch.ops.normkit.norm_fwd(x, weight, bias, residual, eps, weight_offset, is_rms_norm, store_stats,
                                          out_dtype, residual_dtype, x_hat_dtype, gate)
    _launch_all(launches)
    return ops._fwd_placeholders(x, outputs)


# ----------------------------------------------------------------------------- backward
def _aligned(n: int, *tensors: Optional[Tensor]) -> bool:
    """`variant.vector_aligned` without data pointers (fake tensors have none): Inductor hands
    Triton kernels 16-byte aligned buffers (it copies a misaligned graph input)."""
    return n % 16 == 0 and all(t is None or (t.stride(1) == 1 and t.stride(0) % 16 == 0) for t in tensors)


_MANY_ROWS = 2 ** 62  # more row blocks than any grid has programs


def bwd_launches(x, weight, dy, mean, rstd, dresidual_out, gate, dx, dweight, dbias, dgate, eps, weight_offset,
                 is_rms_norm, x_hat_dtype) -> Optional[list]:
    """[(kernel, grid, args, options)] of the backward and its finishers, None where the opaque op takes the call."""
    if not _takes(x, (dy, mean, rstd, dresidual_out, gate, dx, dgate), (weight, dweight, dbias)):
        return None
    m, n = x.shape
    weight, mean, rstd = (None if t is None else t.contiguous() for t in (weight, mean, rstd))
    heads, sms = head_count(weight, dbias), multiprocessor_count(x.device)
    aligned = not cfg.may_stage(n, x.element_size()) or _aligned(n, x, dy, dx, dresidual_out, gate, dgate)
    config = bwd_tile(x, dbias, dresidual_out, rstd, gate, is_rms_norm, heads, sms, aligned)
    if not _expressible(config):
        return None
    acc = reference.compute_dtype(x.dtype)
    flags = bwd_flags(x, weight, dweight, dbias, dresidual_out, rstd, gate, is_rms_norm, x_hat_dtype)
    launches = []

    def run(config: cfg.TileConfig) -> None:
        asked = cfg.backward_grid(config, m // heads, sms, n=n, heads=heads)
        partials = _apart([None if g is None else torch.empty((1, asked, heads * n), dtype=acc, device=x.device)
                           for g in (dweight, dbias)])
        # (out2: never written with one grid column, a tensor of its own all the same)
        spares = _apart([None if g is None else torch.empty((1,), dtype=g.dtype, device=x.device)
                         for g in (dweight, dbias)])
        args, options = bwd_arguments(config, x, weight, dy, dresidual_out, mean, rstd, gate, dx, *partials, dgate,
                                      None, heads, float(eps), float(weight_offset), flags, False)
        grid = bwd_grid(config, x, heads, sms)(_built(kernels().norm_bwd_kernel, args, options))
        launches[:] = [(kernels().norm_bwd_kernel, grid, args, options)]
        # a symbolic M (dynamic shapes) can make the grid symbolic: the finisher's tile is then sized for the
        # most programs the grid takes (its loop masks the partial rows past the count it is given)
        most = grid[0] if isinstance(grid[0], int) else cfg.backward_grid(config, _MANY_ROWS, sms, n=n, heads=heads)
        for partial, grad, spare in zip(partials, (dweight, dbias), spares):
            if grad is not None:
                finish = finish_arguments(partial, grad, spare, 1, grid[0], heads * n, False, tile_rows=most)
                launches.append((kernels().sum_partials_kernel, *finish))

    run_compiled(run, config, cfg.fit_block_m(FALLBACK_BWD, rows_to_fit(m // heads)),
                 lambda: ("bwd", flags, x.dtype, dy.dtype))
    return launches


def _norm_bwd_triton(x: Tensor, weight: Optional[Tensor], dout: Tensor, mean: Optional[Tensor],
                     rstd: Optional[Tensor], dresidual_out: Optional[Tensor], bias_shape: Optional[List[int]],
                     bias_dtype: Optional[torch.dtype], eps: float, weight_offset: float, is_rms_norm: bool,
                     x_hat_dtype: Optional[torch.dtype], gate: Optional[Tensor] = None
                     ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    from . import ops

    outputs = _apart(ops._bwd_outputs(x, weight, bias_shape, bias_dtype, gate))
    dx, dweight, dbias, dgate = outputs
    launches = bwd_launches(x, weight, dout, mean, rstd, dresidual_out, gate, dx, dweight, dbias, dgate, eps,
                            weight_offset, is_rms_norm, x_hat_dtype)
    if launches is None:
        return torch.ops.normkit.norm_bwd(x, weight, dout, mean, rstd, dresidual_out, bias_shape, bias_dtype, eps,
                                          weight_offset, is_rms_norm, x_hat_dtype, gate)
    _launch_all(launches)
    return ops._bwd_placeholders(x, outputs)


torch.library.triton_op("normkit::norm_fwd_triton", _norm_fwd_triton, mutates_args=())
torch.library.triton_op("normkit::norm_bwd_triton", _norm_bwd_triton, mutates_args=())
