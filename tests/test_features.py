"""Residual add, prenorm, bias, weight offset, LayerNorm, mixed dtypes, out/residual dtypes and
per-head weights, against float64 autograd of the plain formula (tests/feature_cases.py, independent of
`normkit.reference`):

    h = x + residual,  ĥ = (h − mean)·rstd  (mean = 0 for RMSNorm),  y = ĥ·(weight + weight_offset) + bias

Flag combinations are a pairwise covering set (every value of every flag meets every value of every
other flag at least twice, `test_case_matrix_covers_every_pair` proves it) instead of the full
cartesian product, which the Triton interpreter could not run in reasonable time.
"""

import dataclasses
import itertools

import pytest
import torch

import normkit
from tests.feature_cases import DTYPES, Case, _assert_rounded_sum, _coarsest, _make_case_inputs, _reference
from tests.utils import assert_matches

FACTORS = {"norm": ["rms", "ln"], "dtype": list(DTYPES), "weight": [True, False], "bias": [True, False],
           "residual": [None, "same", "fp32"], "prenorm": [True, False], "offset": [False, True],
           "mixed": [False, True], "out": [None, "fp32", "bf16"], "rd": [None, "fp32", "bf16"],
           "heads": [False, True]}

CASES = [  # a greedy pairwise cover, each pair at least twice (26 cases), then six hand-picked ones
    "rms fp32 w b",
    "rms fp32 w b heads",
    "rms bf16 w res pre off mixed out=fp32 rd=fp32",
    "rms bf16 w res pre off mixed out=fp32 rd=fp32 heads",
    "ln fp16 res32 pre out=bf16 rd=bf16",
    "ln fp16 b res32 mixed out=bf16 rd=fp32",
    "rms fp16 w b res32 pre off out=bf16 rd=bf16 heads",
    "ln bf16 w res32 mixed rd=bf16 heads",
    "ln bf16 b res pre out=fp32",
    "rms fp16 w off mixed out=bf16 heads",
    "ln fp32 w b res out=fp32 rd=fp32 heads",
    "rms bf16 w b res32 off mixed rd=bf16",
    "ln fp32 out=fp32",
    "rms fp32 res pre rd=fp32",
    "rms fp16 w b res pre off",
    "rms bf16 b out=bf16",
    "ln fp16 b res mixed rd=fp32",
    "rms fp32 w b res pre off out=bf16 rd=bf16",
    "rms fp16 w b off mixed out=fp32",
    "rms fp32 w b res pre off out=bf16 rd=bf16 heads",
    "rms fp16 res32 pre out=fp32 rd=bf16",
    "rms bf16 w b res32 pre out=bf16 rd=fp32",
    "rms bf16 w b res32 pre out=fp32",
    "ln bf16 w b",
    "rms fp32 w b res pre out=fp32 rd=bf16",
    "rms bf16 w b res32 pre",
    "ln bf16 w b res32 pre mixed out=fp32",  # flash-attn's residual_in_fp32 with fp32 parameters
    "ln fp16 w b res pre mixed rd=fp32 heads",
    "rms fp16 w off out=fp32 heads",
    "ln fp32 w b res pre",
    "ln bf16 b res pre mixed",  # float32 bias, no weight: dbias in bias's dtype, not h's
    "ln fp16 b res32 pre out=bf16 rd=bf16",  # fp16 bias beside a bf16 residual_out
]
# A per-head bias without weight (dbias must come back (H, D), not (D,)):
PER_HEAD_BIAS_CASES = ["rms fp32 b res heads", "ln bf16 b mixed out=fp32 heads"]
N_CYCLE = (77, 256, 1000)  # odd N, a power of two, a row wider than one interpreter tile row


def _shape(case: Case, index: int):
    n = N_CYCLE[index % len(N_CYCLE)]
    return (2, 3, 4, n) if case.heads else (3, 5, n)


def _matrix_params():
    return [pytest.param(spec, _shape(Case.parse(spec), i), id=spec.replace(" ", "-"))
            for i, spec in enumerate(CASES + PER_HEAD_BIAS_CASES)]


def test_case_matrix_covers_every_pair():
    """Every pair of flag values that some valid combination holds is in ≥ 2 cases."""
    cases = [Case.parse(spec) for spec in CASES + PER_HEAD_BIAS_CASES]
    assert all(c.is_valid() for c in cases)
    names = list(FACTORS)

    def pairs(case):
        values = dataclasses.asdict(case)
        return {(a, values[a], b, values[b]) for a, b in itertools.combinations(names, 2)}

    needed = set()
    for values in itertools.product(*FACTORS.values()):
        case = Case(**dict(zip(names, values)))
        if case.is_valid():
            needed |= pairs(case)
    counts = {pair: 0 for pair in needed}
    for case in cases:
        for pair in pairs(case):
            counts[pair] += 1
    missing = sorted(str(p) for p, count in counts.items() if count < 2)
    assert not missing, f"pairs covered fewer than twice: {missing[:10]}"


def _check_case(case: Case, shape, device, seed=0):
    x, weight, bias, residual, dy, dresidual_out = _make_case_inputs(case, shape, device, seed)
    leaves = [None if t is None else t.clone().requires_grad_() for t in (x, weight, bias, residual)]
    kwargs = dict(prenorm=case.prenorm, out_dtype=DTYPES.get(case.out), residual_dtype=DTYPES.get(case.rd))
    offset = 1.0 if case.offset else 0.0
    if case.norm == "rms":
        eps = 1e-6
        out = normkit.rms_norm(*leaves, eps=eps, weight_offset=offset, **kwargs)
    else:
        eps = 1e-5
        out = normkit.layer_norm(*leaves, eps=eps, **kwargs)
    y, residual_out = out if case.prenorm else (out, None)
    y_ref, _, _, grads_ref = _reference(x, weight, bias, residual, dy, dresidual_out, rms=case.norm == "rms",
                                        eps=eps, weight_offset=offset)

    assert y.shape == x.shape and y.dtype == (DTYPES[case.out] if case.out else x.dtype)
    assert_matches(y, y_ref, y.dtype, "y")
    # h is saved as residual_out, so the backward sees it rounded to residual_out's dtype.
    h_dtype = DTYPES[case.h_dtype()] if residual is not None else None
    if case.prenorm:
        assert residual_out.shape == x.shape and residual_out.dtype == h_dtype
        _assert_rounded_sum(residual_out, x, residual, h_dtype)
        torch.autograd.backward([y, residual_out], [dy, dresidual_out])
    else:
        y.backward(dy)

    for name, leaf, grad_ref in zip(["dx", "dweight", "dbias", "dresidual"], leaves, grads_ref):
        if leaf is None:
            continue
        assert leaf.grad.dtype == leaf.dtype and leaf.grad.shape == leaf.shape, name
        tol = leaf.dtype if name == "dbias" else _coarsest(leaf.dtype, h_dtype)  # dbias = Σ dy: no h in it
        assert_matches(leaf.grad, grad_ref, tol, name)


@pytest.mark.parametrize("spec,shape", _matrix_params())
def test_feature_matrix_matches_float64(spec, shape, device):
    _check_case(Case.parse(spec), shape, device)


@pytest.mark.parametrize("spec", ["rms fp32 w b res pre off", "ln bf16 w b res32 pre mixed out=fp32"])
def test_rows_longer_than_a_tile(spec, device):
    """N > 65536: rows walked in column tiles (statistics by Chan's merge, a second pass for y)."""
    _check_case(Case.parse(spec), (2, 70000), device, seed=1)


@pytest.mark.parametrize("fn", [normkit.rms_norm, normkit.layer_norm], ids=["rms", "ln"])
@pytest.mark.parametrize("shape", [(0, 64), (2, 0, 4, 16)], ids=["flat", "per_head"])
def test_zero_rows(fn, shape, device):
    param_shape = shape[-2:] if len(shape) == 4 else shape[-1:]
    x, residual = (torch.randn(shape, device=device).requires_grad_() for _ in range(2))
    weight, bias = (torch.randn(param_shape, device=device).requires_grad_() for _ in range(2))
    y, residual_out = fn(x, weight, bias, residual, prenorm=True, residual_dtype=torch.bfloat16)
    assert y.shape == shape and residual_out.shape == shape and residual_out.dtype == torch.bfloat16
    (y.sum() + residual_out.sum()).backward()
    assert x.grad.shape == shape and residual.grad.shape == shape
    assert torch.equal(weight.grad, torch.zeros_like(weight)) and torch.equal(bias.grad, torch.zeros_like(bias))


def test_weight_offset_is_an_fp32_add_and_leaves_dweight_alone(device):
    """weight_offset = 1 is weight + 1 added in fp32: the same y and dx as passing weight + 1, and
    dweight = Σ dy·ĥ, unchanged by the offset (bitwise)."""
    case = Case.parse("rms bf16 w res pre mixed")
    x, weight, _, residual, dy, dresidual_out = _make_case_inputs(case, (6, 256), device, seed=2)
    results = []
    for w, offset in ((weight, 1.0), (weight + 1.0, 0.0), (weight, 0.0)):
        leaves = [t.clone().requires_grad_() for t in (x, w, residual)]
        y, h = normkit.rms_norm(leaves[0], leaves[1], residual=leaves[2], prenorm=True, weight_offset=offset)
        torch.autograd.backward([y, h], [dy, dresidual_out])
        results.append((y, leaves[0].grad, leaves[1].grad))
    (y_off, dx_off, dw_off), (y_plus, dx_plus, dw_plus), (_, _, dw_plain) = results
    assert torch.equal(y_off, y_plus) and torch.equal(dx_off, dx_plus)
    assert torch.equal(dw_off, dw_plus) and torch.equal(dw_off, dw_plain)
    _, _, h_hat, _ = _reference(x, weight, None, residual, dy, rms=True, eps=1e-6)
    assert_matches(dw_off, (dy.double().cpu() * h_hat).sum(0), torch.bfloat16, "dweight = Σ dy·ĥ")


# ----------------------------------------------------------------------------- regressions
@pytest.mark.parametrize("fn", [normkit.rms_norm, normkit.layer_norm], ids=["rms", "ln"])
def test_per_head_bias_without_weight(fn, device):
    x = torch.randn(2, 3, 4, 40, device=device, requires_grad=True)
    bias = torch.randn(4, 40, device=device, requires_grad=True)
    dy = torch.randn(2, 3, 4, 40, device=device)
    fn(x, None, bias).backward(dy)
    assert_matches(bias.grad, dy.double().sum((0, 1)), torch.float32, "dbias")


@pytest.mark.parametrize("weight_dtype", [None, torch.bfloat16], ids=["no_weight", "bf16_weight"])
def test_float32_bias_gradient_keeps_float32_precision(weight_dtype, device):
    """bf16 x, float32 bias: dbias = Σ dy is float32-accurate, not rounded through the weight's
    (or, without weight, x's) 16-bit dtype and upcast."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(8, 64, generator=g).to(device=device, dtype=torch.bfloat16).requires_grad_()
    weight = None if weight_dtype is None else torch.randn(64, generator=g).to(device, weight_dtype)
    bias = torch.randn(64, generator=g).to(device).requires_grad_()
    dy = torch.randn(8, 64, generator=g).to(device=device, dtype=torch.bfloat16)
    normkit.layer_norm(x, weight, bias).backward(dy)
    assert bias.grad.dtype == torch.float32
    assert_matches(bias.grad, dy.double().sum(0), torch.float32, "dbias")
