"""Property-based tests (hypothesis, derandomized and bounded so CI stays fast and reproducible).

Every example is compared with a float64 autograd reference of the plain formula:

    h = x + residual,  ĥ = (h − mean)·rstd  (mean = 0 for RMSNorm),  y = ĥ·(weight + weight_offset) + bias

* `test_public_api_matches_float64`: random M (0 … 600), N (1 … 70000), leading dims, dtypes, strides
  (row stride > N, last-dim stride ≠ 1, every other element, permuted leading dims) and every
  flag of `normkit.rms_norm` / `normkit.layer_norm` (residual, prenorm, bias, weight None,
  weight_offset, out_dtype, residual_dtype, per-head weights, casting_mode), through autograd.
* `test_launchers_write_every_element`: the low-level launchers with every output pre-filled
  with NaN inside a guard band of sentinels: every element must be written (no NaN left) and
  nothing outside it (sentinels intact); random tile configurations, persistent-grid sizes and
  both dweight finishers.
* `test_every_gpu_heuristic_config`: every TileConfig the GPU heuristics pick for N in
  1 … 262144 (tests/config_cases.py enumerates them from `tile_config` itself), forced onto a
  small CPU problem through `config=`, forward and backward, three families.
* `test_every_interpreter_heuristic_config`: every TileConfig the interpreter heuristics pick,
  reached through the public API without any override.

Which configurations ran is collected in CONFIGS_HIT and printed in pytest's terminal summary
(tests/conftest.py). NORMKIT_HYPOTHESIS_EXAMPLES=<k> multiplies the number of examples (a longer
local run); NORMKIT_HYPOTHESIS_RANDOM=1 draws fresh examples instead of the fixed derandomized
sequence (bug hunting); NORMKIT_HYPOTHESIS_SHRINK=1 lets hypothesis shrink a failure (slow in the
interpreter, so CI reports the first failing example as drawn).
"""

import collections
import itertools
import os
from typing import Optional

import pytest
import torch

try:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
except ImportError:  # the two @given tests skip; every other test here runs without hypothesis
    HealthCheck = Phase = settings = None

    class _NoStrategies:
        def composite(self, fn):
            return lambda *args, **kwargs: None

        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    st = _NoStrategies()

    def given(**_):
        return pytest.mark.skip(reason="hypothesis is not installed: pip install -e '.[test]'")

import normkit  # noqa: E402
from normkit import config as cfg  # noqa: E402
from normkit import launchers, ops, variant  # noqa: E402
from normkit._runtime import interpret  # noqa: E402
from tests.config_cases import (ELEMENT_SIZE_SCENARIOS, GPU_SCENARIOS, INTERPRET_N_MAX,  # noqa: E402
                                LAYER_NORM_SCENARIOS, RECOMPUTE_SCENARIOS, RESIDUAL_SCENARIOS,
                                VECTOR_ALIGNED_SCENARIOS, config_problems, describe, heuristic_configs, runs_family)
from tests.feature_cases import _coarsest  # noqa: E402
from tests.forced_runs import (BF16, DEVICE, F16, F32, F64, FAMILIES, NAN, assert_rounded_sum,  # noqa: E402
                               assert_written, check, family_inputs, grid, guarded, randn, reference, run_forced)


# Casts of intermediates in the interpreter's numpy (e.g. a large fp16 dy upcast then scaled) may warn;
# every output is checked for non-finite values instead.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

# (kind, heuristics, config) → times run. Printed by tests/conftest.py at the end of the session.
CONFIGS_HIT: "collections.Counter" = collections.Counter()


def _scaled(n: int) -> int:
    return max(1, int(n * float(os.environ.get("NORMKIT_HYPOTHESIS_EXAMPLES", "1"))))


def _settings(max_examples: int):
    if settings is None:
        return lambda fn: fn
    phases = [Phase.explicit, Phase.generate]
    if os.environ.get("NORMKIT_HYPOTHESIS_SHRINK"):
        phases.append(Phase.shrink)
    random = bool(os.environ.get("NORMKIT_HYPOTHESIS_RANDOM"))  # bug hunting: fresh examples each run
    return settings(max_examples=_scaled(max_examples), deadline=None, derandomize=not random, database=None,
                    phases=phases, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.large_base_example])


def record(backward: bool, config: cfg.TileConfig, heuristics: str) -> None:
    CONFIGS_HIT[("bwd" if backward else "fwd", heuristics, config)] += 1


def coverage_summary() -> list:
    """Lines for the terminal summary: configurations reached out of those the heuristics can pick."""
    lines = []
    for heuristics, is_interp, n_max in (("gpu", False, None), ("interpreter", True, INTERPRET_N_MAX)):
        for kind in ("fwd", "bwd"):
            pickable = heuristic_configs(kind == "bwd", is_interp, *(() if n_max is None else (n_max,)))
            hit = [c for c in pickable if CONFIGS_HIT[(kind, heuristics, c)]]
            runs = sum(CONFIGS_HIT[(kind, heuristics, c)] for c in pickable)
            if runs:
                lines.append(f"normkit {heuristics} heuristics, {kind}: {len(hit)}/{len(pickable)} configurations "
                             f"run ({runs} launches)")
                lines += [f"  missed: {describe(c)}" for c in pickable if c not in hit]
    return lines


# ----------------------------------------------------------------------------- layouts
LAYOUTS = ["contiguous", "row_padded", "col_strided", "every_other", "lead_permuted"]


def lay_out(t: Optional[torch.Tensor], kind: str) -> Optional[torch.Tensor]:
    """The same values in another memory layout. Padding is NaN, so reading it shows up."""
    if t is None:
        return None
    n = t.shape[-1]
    if kind == "row_padded":  # row stride N + 3
        buf = torch.full(t.shape[:-1] + (n + 3,), NAN, dtype=t.dtype, device=t.device)
        buf[..., :n] = t
        return buf[..., :n]
    if kind == "every_other":  # last-dim stride 2, row stride 2N
        buf = torch.full(t.shape[:-1] + (2 * n,), NAN, dtype=t.dtype, device=t.device)
        buf[..., ::2] = t
        return buf[..., ::2]
    if kind == "col_strided" and t.dim() >= 2:  # last-dim stride M (a transposed view)
        return t.movedim(-1, 0).contiguous().movedim(0, -1)
    if kind == "lead_permuted" and t.dim() >= 3:  # leading dims transposed (reshape copies)
        return t.transpose(0, 1).contiguous().transpose(0, 1)
    return t.contiguous()


# ----------------------------------------------------------------------------- strategies
N_EDGES = [1, 2, 3, 31, 32, 33, 127, 128, 129, 255, 1023, 1025, 4095, 4096, 4097, 8193, 16384, 16385,
           32767, 32769, 65535, 65536, 65537, 70000]


def widths():
    """N in 1 … 70000: small, medium and wide rows alike, and the tile edges."""
    return st.one_of(st.integers(1, 300), st.integers(301, 6000), st.integers(6001, INTERPRET_N_MAX),
                     st.sampled_from(N_EDGES))


def _lead_shape(draw, n, budget, heads):
    """Leading dims (0 … 3 of them, zeros allowed) with M ≤ min(600, budget / N); with heads the
    last leading dim is H (1 … 8)."""
    m_max = max(1, min(600, budget // n))
    ndim = draw(st.integers(1 if heads else 0, 3))
    dims, room = [], m_max
    for i in range(ndim):
        last = i == ndim - 1
        if heads and last:
            dims.append(draw(st.integers(1, max(1, min(8, room)))))
        else:
            dims.append(draw(st.integers(0, max(1, room if (last and not heads) else min(room, 24)))))
        room = max(1, room // max(1, dims[-1]))
    return tuple(dims)


FLOAT_16 = [F16, BF16]
# float64 x with a bfloat16 output (under the interpreter normkit stores it through float32:
# test_float64_to_bfloat16_outputs)
BF16_FROM_F64 = [BF16]
OTHER_DTYPES = [F32, BF16, F16]


@st.composite
def public_cases(draw):
    rms = draw(st.booleans())
    dtype = draw(st.sampled_from([F32, BF16, F16, F64]))
    n = draw(widths())
    weight, bias = draw(st.booleans()), draw(st.booleans())
    heads = (weight or bias) and draw(st.booleans())
    shape = _lead_shape(draw, n, 40_000, heads) + (n,)
    param_shape = shape[-2:] if heads else shape[-1:]
    wide = dtype == F64  # float64 runs compute in float64 and take float64 tensors only
    param_dtype = F64 if wide else draw(st.sampled_from([dtype] + [d for d in OTHER_DTYPES if d != dtype]))
    residual = draw(st.sampled_from([None, dtype] + ([] if wide else [d for d in OTHER_DTYPES if d != dtype])))
    residual_dtype = draw(st.sampled_from([None, F64, F32, F16] + BF16_FROM_F64 if wide else [None, F32, BF16, F16]))
    return dict(
        rms=rms, dtype=dtype, shape=shape, param_shape=param_shape, weight=weight, bias=bias, heads=heads,
        param_dtype=param_dtype, residual=residual,
        prenorm=residual is not None and draw(st.booleans()),
        offset=draw(st.sampled_from([0.0, 1.0, -0.5])) if rms and weight else 0.0,
        out_dtype=draw(st.sampled_from([None, F32, F16, F64] + (BF16_FROM_F64 if wide else [BF16]))),
        residual_dtype=residual_dtype,
        casting=draw(st.sampled_from(["fp32", "llama"])),
        eps=draw(st.sampled_from([1e-6, 1e-5, 1e-2])),
        scale=draw(st.sampled_from([1.0, 0.01, 40.0])), shift=draw(st.sampled_from([0.0, 3.0])),
        layouts={name: draw(st.sampled_from(LAYOUTS)) for name in ("x", "residual", "dy", "dresidual_out")},
        param_layout=draw(st.sampled_from(["contiguous", "every_other"])),
        seed=draw(st.integers(0, 2**16)),
    )


# ----------------------------------------------------------------------------- public API
@_settings(max_examples=150)
@given(case=public_cases())
def test_public_api_matches_float64(case):
    c = case
    g = torch.Generator().manual_seed(c["seed"])
    shape, dtype = c["shape"], c["dtype"]
    x = randn(g, shape, dtype, c["scale"], c["shift"])
    weight = (1.0 - c["offset"]) + 0.5 * randn(g, c["param_shape"], F64) if c["weight"] else None
    weight = None if weight is None else weight.to(c["param_dtype"])
    bias = 0.5 * randn(g, c["param_shape"], c["param_dtype"]) if c["bias"] else None
    residual = randn(g, shape, c["residual"], c["scale"]) if c["residual"] is not None else None
    y_dtype = c["out_dtype"] or dtype
    h_dtype = c["residual_dtype"] or (c["residual"] or dtype)
    saves_h = residual is not None or h_dtype != dtype  # h is saved as residual_out (rounded)
    dy = (0.5 * x.double() / c["scale"] + randn(g, shape, F64)).to(y_dtype)
    dresidual_out = randn(g, shape, h_dtype) if c["prenorm"] else None

    leaves = [None if t is None else lay_out(t, layout).requires_grad_()
              for t, layout in ((x, c["layouts"]["x"]), (weight, c["param_layout"]), (bias, c["param_layout"]),
                                (residual, c["layouts"]["residual"]))]
    kwargs = dict(eps=c["eps"], prenorm=c["prenorm"], out_dtype=c["out_dtype"], residual_dtype=c["residual_dtype"],
                  casting_mode=c["casting"])
    if c["rms"]:
        outputs = normkit.rms_norm(*leaves, weight_offset=c["offset"], **kwargs)
    else:
        outputs = normkit.layer_norm(*leaves, **kwargs)
    y, residual_out = outputs if c["prenorm"] else (outputs, None)

    x_hat_dtype = dtype if c["casting"] == "llama" else None
    ref = reference(x, weight, bias, residual, dy, dresidual_out, rms=c["rms"], eps=c["eps"],
                    weight_offset=c["offset"], x_hat_dtype=x_hat_dtype)
    slack = 2.0 if x_hat_dtype in FLOAT_16 else 1.0  # kernel and reference may round x̂ one ulp apart
    assert y.dtype == y_dtype and y.shape == shape
    compute = F64 if dtype == F64 else F32
    check(y, ref["y"], _coarsest(y_dtype, x_hat_dtype, compute), "y", ref["y_scale"], slack)
    if c["prenorm"]:
        assert residual_out.dtype == h_dtype and residual_out.shape == shape
        assert_rounded_sum(residual_out, x, residual, h_dtype)
        torch.autograd.backward([y, residual_out], [lay_out(dy, c["layouts"]["dy"]),
                                                    lay_out(dresidual_out, c["layouts"]["dresidual_out"])])
    else:
        y.backward(lay_out(dy, c["layouts"]["dy"]))

    h_tol = h_dtype if saves_h else None
    # The backward computes in the saved h's compute dtype: float32 when a float64 x saved h in a
    # lower residual_dtype, so even dbias = Σ dy is float32-accurate then.
    bwd_compute = F64 if (h_dtype if saves_h else dtype) == F64 else F32
    tols = [_coarsest(dtype, h_tol), _coarsest(c["param_dtype"], h_tol, x_hat_dtype),
            _coarsest(c["param_dtype"], bwd_compute), _coarsest(c["residual"] or dtype, h_tol)]
    for name, leaf, grad_ref, scale, tol in zip(["dx", "dweight", "dbias", "dresidual"], leaves, ref["grads"],
                                                 ref["scales"], tols):
        if leaf is None:
            continue
        assert leaf.grad is not None and leaf.grad.dtype == leaf.dtype and leaf.grad.shape == leaf.shape, name
        check(leaf.grad, grad_ref, tol, name, scale, slack)

    m = x.numel() // shape[-1]
    if m:  # what ops.launch_fwd / launch_bwd picked
        heads = c["param_shape"][0] if c["heads"] else 1
        heuristics = "interpreter" if interpret() else "gpu"
        record(False, cfg.tile_config(shape[-1], False, interpret(), residual=c["residual"] is not None,
                                      layer_norm=not c["rms"], element_size=x.element_size()), heuristics)
        # (with prenorm the gradient arriving on residual_out is passed to the backward as dresidual_out)
        record(True, cfg.tile_config(shape[-1], True, interpret(), heads=heads,
                                     multiprocessors=launchers.multiprocessor_count(x.device),
                                     residual=bool(c["prenorm"]), layer_norm=not c["rms"],
                                     element_size=x.element_size(),
                                     vector_aligned=variant.vector_aligned(shape[-1], x.reshape(-1, shape[-1]))),
               heuristics)


# ----------------------------------------------------------------------------- launchers, poisoned
# Largest tile (BLOCK_M × BLOCK_N) of a drawn configuration: the interpreter runs any size (numpy),
# compiled kernels keep a tile in registers (the heuristics stay at ≤ 8192 elements but for a
# few whole rows; a 2**17 tile would take ptxas minutes).
MAX_TILE = 1 << 17 if interpret() else 1 << 13


def _pow2_up_to(limit):
    return [1 << k for k in range(0, limit.bit_length()) if (1 << k) <= limit]


@st.composite
def launcher_cases(draw):
    rms = draw(st.booleans())
    dtype = draw(st.sampled_from([F32, BF16, F16, F64]))
    wide = dtype == F64
    n = draw(widths())
    heads = draw(st.sampled_from([1, 1, 2, 3, 4]))
    weight, bias = draw(st.booleans()), draw(st.booleans())
    if heads > 1 and not (weight or bias):
        weight = True
    m_max = max(1, min(600, 30_000 // n))
    config = None
    if draw(st.booleans()):  # a tile configuration of our own (the heuristic's otherwise)
        whole = cfg.next_power_of_2(n)
        one_tile = whole <= MAX_TILE and draw(st.booleans())
        if one_tile:  # the whole row in one tile, possibly wider than the row
            block_n = draw(st.sampled_from([b for b in (whole, 2 * whole) if b <= MAX_TILE]))
        else:  # column tiles, at most 32 a row (a single one when BLOCK_N ≥ N)
            low = cfg.next_power_of_2(-(-n // 32))
            block_n = draw(st.sampled_from([b for b in _pow2_up_to(min(2 * whole, MAX_TILE)) if b >= low]
                                           or [MAX_TILE]))
        block_m = draw(st.sampled_from([b for b in _pow2_up_to(64) if b * block_n <= MAX_TILE] or [1]))
        warps = max(1, min(16, block_m * block_n // 512))  # as the heuristics do: compiles in seconds on a GPU
        config = cfg.TileConfig(block_m, block_n, one_tile, num_warps=warps,
                                programs_per_sm=draw(st.sampled_from([1, 2, 3])))
        # Each row block × column tile is a Python loop iteration in the interpreter: ≤ 64 of them.
        tiles = 1 if one_tile else -(-n // block_n)
        m_max = max(1, min(m_max, block_m * max(1, 64 // tiles)))
    rows = draw(st.integers(0, max(1, m_max // heads))) * heads  # a multiple of H
    other = [d for d in OTHER_DTYPES if d != dtype]
    residual_out = draw(st.sampled_from([None, dtype] + ([] if wide else other)))
    if not rms and n == 1 and residual_out not in (None, F32, F64):
        # launchers take the statistics they are given; saved statistics on a rounded h are what the
        # autograd path avoids (test_layer_norm_backward_of_a_zero_variance_row_on_rounded_h)
        residual_out = None
    return dict(
        rms=rms, dtype=dtype, m=rows, n=n, heads=heads, weight=weight, bias=bias, config=config,
        param_dtype=F64 if wide else draw(st.sampled_from([dtype] + other)),
        residual=draw(st.sampled_from([None, dtype] + ([] if wide else other))),
        residual_out=residual_out,
        out_dtype=draw(st.sampled_from([dtype] + ([F32, F16] + BF16_FROM_F64 if wide else other))),
        x_hat_dtype=draw(st.sampled_from([None, dtype])),
        offset=draw(st.sampled_from([0.0, 1.0])) if rms and weight else 0.0,
        store_stats=draw(st.booleans()), saved_stats=draw(st.booleans()),
        dresidual_out=draw(st.booleans()),
        multiprocessors=draw(st.sampled_from([1, 4, 13])),
        gpu_finisher=heads * n <= 2048 and draw(st.booleans()),  # 128 columns a program: slow here
        eps=draw(st.sampled_from([1e-6, 1e-5])),
        x_layout=draw(st.sampled_from(LAYOUTS[:4])), dy_layout=draw(st.sampled_from(LAYOUTS[:4])),
        seed=draw(st.integers(0, 2**16)),
    )


@_settings(max_examples=60)
@given(case=launcher_cases())
def test_launchers_write_every_element(case):
    c = case
    m, n, heads, dtype = c["m"], c["n"], c["heads"], c["dtype"]
    g = torch.Generator().manual_seed(c["seed"])
    x = randn(g, (m, n), dtype)
    pshape = (heads, n) if heads > 1 else (n,)
    weight = (1.0 - c["offset"] + 0.5 * randn(g, pshape, F64)).to(c["param_dtype"]) if c["weight"] else None
    bias = 0.5 * randn(g, pshape, c["param_dtype"]) if c["bias"] else None
    residual = randn(g, (m, n), c["residual"]) if c["residual"] is not None else None
    h_dtype = c["residual_out"]
    x_in, res_in = lay_out(x, c["x_layout"]), lay_out(residual, c["x_layout"])
    config = c["config"]

    out_buf, out = guarded((m, n), c["out_dtype"], rows=True)
    ro_buf, residual_out = guarded((m, n), h_dtype, rows=True) if h_dtype is not None else (None, None)
    sdt = F64 if dtype == F64 else F32
    rstd_buf, rstd = guarded((m,), sdt) if c["store_stats"] else (None, None)
    mean_buf, mean = guarded((m,), sdt) if c["store_stats"] and not c["rms"] else (None, None)
    ops.launch_fwd(x_in, out, weight=weight, bias=bias, residual=res_in, residual_out=residual_out, mean=mean,
                   rstd=rstd, eps=c["eps"], weight_offset=c["offset"], is_rms_norm=c["rms"],
                   x_hat_dtype=c["x_hat_dtype"], config=config)
    per_head = (lambda t: t if t is None or heads == 1 else t.view(-1, heads, n))  # noqa: E731
    ref = reference(per_head(x), weight, bias, per_head(residual), per_head(torch.zeros_like(x, dtype=F64)),
                    rms=c["rms"], eps=c["eps"], weight_offset=c["offset"], x_hat_dtype=c["x_hat_dtype"])
    slack = 2.0 if c["x_hat_dtype"] in FLOAT_16 else 1.0
    assert_written(out_buf, out, "y")
    compute = F64 if dtype == F64 else F32
    check(out, ref["y"].reshape(m, n), _coarsest(c["out_dtype"], c["x_hat_dtype"], compute), "y",
          ref["y_scale"].reshape(m, n), slack)
    if residual_out is not None:
        assert_written(ro_buf, residual_out, "residual_out")
        if residual is None:
            assert torch.equal(residual_out, x.to(h_dtype)) or _bf16_truncated(residual_out, x.float())
        else:
            assert_rounded_sum(residual_out, x, residual, h_dtype)
    if rstd is not None:
        assert_written(rstd_buf, rstd, "rstd")
        check(rstd, ref["rstd"].reshape(m), sdt, "rstd")
    if mean is not None:
        assert_written(mean_buf, mean, "mean")
        check(mean, ref["mean"].reshape(m), sdt, "mean", ref["h"].abs().amax(-1).reshape(m))

    # ---- backward, on the h the forward saved (residual_out, else x)
    h = residual_out if residual_out is not None else x
    h_in = lay_out(h.clone(), c["x_layout"])
    dy = (0.5 * x.double() + randn(g, (m, n), F64)).to(c["out_dtype"])
    dres = randn(g, (m, n), h.dtype) if c["dresidual_out"] else None
    # Saved statistics describe x + residual: usable when that h was stored, or there was no residual.
    use_saved = c["saved_stats"] and rstd is not None and (residual is None or residual_out is not None)
    dx_buf, dx = guarded((m, n), h.dtype, rows=True)
    dw_buf, dweight = guarded(pshape, weight.dtype) if weight is not None else (None, None)
    db_buf, dbias = guarded(pshape, bias.dtype) if bias is not None else (None, None)
    dy_in, dres_in = lay_out(dy, c["dy_layout"]), lay_out(dres, c["dy_layout"])
    with grid(c["multiprocessors"], c["gpu_finisher"]):
        ops.launch_bwd(h_in, dy_in, dx, weight=weight, dweight=dweight, dbias=dbias,
                       dresidual_out=dres_in, mean=mean if use_saved else None,
                       rstd=rstd if use_saved else None, eps=c["eps"], weight_offset=c["offset"],
                       is_rms_norm=c["rms"], x_hat_dtype=c["x_hat_dtype"], config=config)
    ref = reference(per_head(h), weight, bias, None, per_head(dy), per_head(dres), rms=c["rms"], eps=c["eps"],
                    weight_offset=c["offset"], x_hat_dtype=c["x_hat_dtype"])
    stats_tol = sdt if use_saved else None  # saved stats are of the unrounded h: one more rounding
    assert_written(dx_buf, dx, "dx")
    check(dx, ref["grads"][0].reshape(m, n), _coarsest(h.dtype, stats_tol), "dx", ref["scales"][0].reshape(m, n),
          slack)
    if dweight is not None:
        assert_written(dw_buf, dweight, "dweight")
        check(dweight, ref["grads"][1], _coarsest(weight.dtype, h.dtype, c["x_hat_dtype"], stats_tol), "dweight",
              ref["scales"][1], slack)
    if dbias is not None:
        assert_written(db_buf, dbias, "dbias")
        check(dbias, ref["grads"][2], bias.dtype, "dbias", ref["scales"][2])
    if m and config is None:  # what the launchers picked (with the SM count patched above)
        heuristics = "interpreter" if interpret() else "gpu"
        record(False, cfg.tile_config(n, False, interpret(), residual=c["residual"] is not None,
                                      layer_norm=not c["rms"], element_size=x.element_size()), heuristics)
        record(True, cfg.tile_config(n, True, interpret(), heads=heads, multiprocessors=c["multiprocessors"],
                                     residual=dres is not None, layer_norm=not c["rms"],
                                     element_size=x.element_size(),
                                     vector_aligned=variant.vector_aligned(n, h_in, dy_in, dx, dres_in)),
               heuristics)


def _bf16_truncated(t, exact):
    """residual_out without a residual is x converted; the interpreter truncates fp32 → bf16."""
    return t.dtype == BF16 and torch.equal(t, (exact.contiguous().view(torch.int32) & -65536).view(F32).to(BF16))


# ----------------------------------------------------------------------------- every heuristic config
GPU_PROBLEMS = config_problems(False) + config_problems(True)


@pytest.mark.parametrize("problem", GPU_PROBLEMS, ids=lambda p: p.label())
def test_every_gpu_heuristic_config(problem):
    """Each configuration the GPU heuristics can pick (forward and backward), forced onto a small
    problem: two of the three families per width in turn — rms, fused add (residual +
    dresidual_out + weight offset), LayerNorm (bias, a mean of 2) — so each configuration meets
    all three over its two widths (LayerNorm's centered-pass tiles: LayerNorm twice); bf16 on
    narrow rows, fp32 on wide ones (the interpreter's bf16 conversion is slow); saved and
    recomputed statistics in turn. On a GPU the same code compiles
    each configuration for real (warps and stages included)."""
    if problem.split and interpret():
        pytest.skip("split rows need every program resident at once (GPU only; the interpreter runs "
                    "programs one after another)")
    index = GPU_PROBLEMS.index(problem)
    for k in (0, 1):  # LayerNorm's own configurations (its centred second pass) run LayerNorm only
        family = FAMILIES[(index + k) % len(FAMILIES)]
        family = family if runs_family(problem.config, family) else "layer_norm"
        dtype = BF16 if problem.n <= 4096 and (index + k) % 2 == 0 else F32
        run_forced(problem, family, dtype, recompute=(index + k) % 2 == 1, seed=index)
    record(problem.backward, problem.config, "gpu")


def test_gpu_heuristics_enumeration():
    """The enumeration itself: sampled N map to listed configurations, each listed configuration
    has problems above, one-tile problems fit their tile while column-tile and split problems are
    wider than it, and backward problems give each persistent program two or more row blocks."""
    for backward in (False, True):
        configs = heuristic_configs(backward)
        for n in (1, 2, 3, 1000, 4097, 16384, 16385, 32768, 32769, 131073, 262144):
            for (heads, sms), residual, layer_norm, size, aligned, recompute in itertools.product(
                    GPU_SCENARIOS, RESIDUAL_SCENARIOS, LAYER_NORM_SCENARIOS, ELEMENT_SIZE_SCENARIOS,
                    VECTOR_ALIGNED_SCENARIOS, RECOMPUTE_SCENARIOS):
                picked = cfg.tile_config(n, backward, False, heads=heads, multiprocessors=sms, residual=residual,
                                         layer_norm=layer_norm, element_size=size, vector_aligned=aligned,
                                         recompute=recompute)
                assert picked in configs, (n, heads, residual, layer_norm, size, aligned, recompute, picked)
                if not backward and residual and size == 2:  # the fused forwards' 4-byte residual
                    picked = cfg.tile_config(n, False, False, heads=heads, multiprocessors=sms, residual=True,
                                             layer_norm=layer_norm, element_size=2, residual_element_size=4)
                    assert picked in configs, (n, heads, layer_norm, "4-byte residual", picked)
        problems = [p for p in GPU_PROBLEMS if p.backward == backward]
        assert {p.config for p in problems} == set(configs)
        for p in problems:
            assert (p.n <= p.config.block_n) == (p.config.one_tile and not p.split)
            assert cfg.fit_block_m(p.config, p.m) == p.config  # BLOCK_M is not shrunk away
            if backward:
                programs = cfg.backward_grid(p.config, p.m, p.multiprocessors, n=p.n)
                assert cfg.cdiv(p.m, p.config.block_m) >= 2 * programs  # programs own ≥ 2 row blocks


INTERPRETER_PROBLEMS = [(config, n) for config, (lo, hi) in heuristic_configs(False, True, INTERPRET_N_MAX).items()
                        for n in sorted({lo, hi})]


@pytest.mark.skipif(not interpret(), reason="the interpreter's heuristics (CPU)")
def test_every_interpreter_heuristic_config():
    """Each configuration the interpreter's heuristics pick, reached the ordinary way (no override):
    the narrowest and widest N of each, 3 rows, through the public autograd API, the three
    families in turn. (The interpreter's forward and backward heuristics agree: same N list.)"""
    assert heuristic_configs(False, True, INTERPRET_N_MAX) == heuristic_configs(True, True, INTERPRET_N_MAX)
    for i, (config, n) in enumerate(INTERPRETER_PROBLEMS):
        family = FAMILIES[i % len(FAMILIES)]
        x, weight, bias, residual, dy, _ = family_inputs(family, 3, n, F32, seed=i)
        leaves = [None if t is None else t.clone().requires_grad_() for t in (x, weight, bias, residual)]
        fn = normkit.layer_norm if family == "layer_norm" else normkit.rms_norm
        y = fn(*leaves)
        y.backward(dy)
        ref = reference(x, weight, bias, residual, dy, rms=family != "layer_norm",
                        eps=1e-5 if family == "layer_norm" else 1e-6)
        check(y, ref["y"], F32, f"y (N={n}, {family})", ref["y_scale"])
        for name, leaf, grad_ref, scale in zip(["dx", "dweight", "dbias", "dresidual"], leaves, ref["grads"],
                                               ref["scales"]):
            if leaf is not None:
                check(leaf.grad, grad_ref, F32, f"{name} (N={n}, {family})", scale)
        assert cfg.tile_config(n, False, True) == config
        record(False, config, "interpreter")
        record(True, cfg.tile_config(n, True, True), "interpreter")


@pytest.mark.parametrize("gpu_finisher,programs", [(False, 1), (False, 9), (False, 17), (True, 1), (True, 33),
                                                   (True, 600)],
                         ids=lambda v: {False: "interp_finisher", True: "gpu_finisher"}.get(v, v)
                         if isinstance(v, bool) else str(v))
def test_finisher_sums_any_number_of_partials(gpu_finisher, programs):
    """dweight/dbias = Σ over G persistent programs' partial rows, G below and above one and two
    of the finisher's BLOCK_G (8 in the interpreter; on a GPU next_power_of_2(G) up to 512, so
    G = 600 takes two steps), N not a multiple of its BLOCK_N (16 columns on a GPU at this N;
    the wider strips: tests/test_ops.py)."""
    m, n = programs + 1, 200
    config = cfg.TileConfig(block_m=1, block_n=256, one_tile=True, programs_per_sm=1)
    x, weight, bias, _, dy, _ = family_inputs("layer_norm", m, n, F32, seed=programs)
    dx = torch.empty(m, n, device=DEVICE)
    dw_buf, dweight = guarded((n,), F32)
    db_buf, dbias = guarded((n,), F32)
    with grid(programs, gpu_finisher):
        assert cfg.backward_grid(config, m, launchers.multiprocessor_count(x.device)) == programs
        ops.launch_bwd(x, dy, dx, weight=weight, dweight=dweight, dbias=dbias, eps=1e-5, is_rms_norm=False,
                       config=config)
    ref = reference(x, weight, bias, None, dy, rms=False, eps=1e-5)
    assert_written(dw_buf, dweight, "dweight")
    assert_written(db_buf, dbias, "dbias")
    check(dweight, ref["grads"][1], F32, "dweight", ref["scales"][1])
    check(dbias, ref["grads"][2], F32, "dbias", ref["scales"][2])


# ----------------------------------------------------------------------------- found by the properties
@pytest.mark.parametrize("what", ["out_dtype", "residual_dtype"])
def test_float64_to_bfloat16_outputs(what):
    """Found by the property tests: Triton 3.6's interpreter converts float64 → bfloat16 wrongly
    (NaN, 0 and denormals: it reads the float64 bits as float32), so these outputs were garbage on
    the CPU path; normkit now stores them through float32 there (normkit/launchers.py)."""
    g = torch.Generator().manual_seed(5)
    x = randn(g, (4, 40), F64)
    residual = randn(g, (4, 40), F64)
    kwargs = {what: BF16}
    y, h = normkit.rms_norm(x, None, None, residual, prenorm=True, **kwargs)
    ref = reference(x, None, None, residual, torch.zeros_like(x), rms=True, eps=1e-6)
    out, expected = (y, ref["y"]) if what == "out_dtype" else (h, ref["h"])
    assert out.dtype == BF16
    check(out, expected, BF16, what)


@pytest.mark.parametrize("case", ["constant_rows_bf16_fused_add", "n1_fp16_residual_out"])
def test_layer_norm_backward_of_a_zero_variance_row_on_rounded_h(case):
    """Found by test_public_api_matches_float64 (NORMKIT_HYPOTHESIS_RANDOM=1): the forward computes
    mean/rstd from h = x + residual in fp32 but saves h rounded (residual_out); applying those
    statistics to the rounded h turned a constant row's rounding into x̂ = noise / sqrt(eps) (and
    inf in fp16 for N = 1). The autograd path now recomputes the statistics from the saved h
    whenever h was rounded (normkit/functional.py)."""
    g = torch.Generator().manual_seed(11)
    if case == "constant_rows_bf16_fused_add":  # the default fused add: bf16 x and residual → bf16 h
        m, n, dtype, residual_dtype = 8, 64, BF16, None
        x = torch.full((m, n), 0.1, device=DEVICE).to(dtype)
        residual = torch.full((m, n), 0.2, device=DEVICE).to(dtype)  # x + residual = 0.30029… → bf16 0.30078
    else:
        m, n, dtype, residual_dtype = 8, 1, F16, F16
        x = randn(g, (m, n), dtype, 40.0, 3.0)
        residual = randn(g, (m, n), F32, 40.0)
    weight = torch.ones(n, device=DEVICE, requires_grad=True)
    bias = torch.zeros(n, device=DEVICE, requires_grad=True)
    dy = randn(g, (m, n), dtype)
    leaves = [x.clone().requires_grad_(), weight, bias, residual.clone().requires_grad_()]
    y, h = normkit.layer_norm(*leaves, prenorm=True, residual_dtype=residual_dtype, eps=1e-5)
    y.backward(dy)
    # Every row has variance 0: ĥ = 0, so y = bias, dweight = Σ dy·ĥ = 0 and dx = rstd·(dy − mean(dy)),
    # whether h is taken before or after rounding (a constant row stays constant).
    assert torch.equal(y.float(), torch.zeros_like(y.float()))
    rstd = 1 / (1e-5) ** 0.5
    dx_ref = rstd * (dy.double() - dy.double().mean(-1, keepdim=True))
    check(weight.grad, torch.zeros(n, dtype=F64), F32, "dweight", scale=dy.double().abs().sum(0))
    check(leaves[0].grad, dx_ref, dtype, "dx", scale=rstd * dy.double().abs())
