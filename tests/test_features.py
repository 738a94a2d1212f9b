"""Residual add, prenorm, bias, weight offset, LayerNorm, mixed dtypes, out/residual dtypes and
per-head weights, against float64 autograd of the plain formula (written here, independent of
`normkit.reference`):

    h = x + residual,  ĥ = (h − mean)·rstd  (mean = 0 for RMSNorm),  y = ĥ·(weight + weight_offset) + bias

Flag combinations are a pairwise covering set (every value of every flag meets every value of every
other flag at least twice, `test_case_matrix_covers_every_pair` proves it) instead of the full
cartesian product, which the Triton interpreter could not run in reasonable time.
"""

import dataclasses
import itertools
from typing import Optional

import pytest
import torch

import normkit
from normkit._runtime import interpret
from tests.utils import assert_matches

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_FINEST_FIRST = [torch.float64, torch.float32, torch.float16, torch.bfloat16]


def _coarsest(*dtypes):
    """The least precise of the given dtypes (None ignored): the tolerance a result is held to."""
    return max((d for d in dtypes if d is not None), key=_FINEST_FIRST.index)


# ----------------------------------------------------------------------------- float64 reference
def _reference(x, weight, bias, residual, dy, dresidual_out=None, *, rms, eps, weight_offset=0.0):
    """Returns y, h, ĥ and the gradients [dx, dweight, dbias, dresidual], all float64.

    dresidual_out (prenorm) is the gradient arriving on h = residual_out."""
    leaves = [None if t is None else t.detach().double().cpu().requires_grad_()
              for t in (x, weight, bias, residual)]
    x64, w64, b64, r64 = leaves
    h = x64 if r64 is None else x64 + r64
    centered = h if rms else h - h.mean(-1, keepdim=True)
    h_hat = centered * torch.rsqrt(centered.square().mean(-1, keepdim=True) + eps)
    y = h_hat
    if w64 is not None:
        y = y * (w64 + weight_offset)
    if b64 is not None:
        y = y + b64
    outputs, grads = [y], [dy.double().cpu()]
    if dresidual_out is not None:
        outputs.append(h)
        grads.append(dresidual_out.double().cpu())
    torch.autograd.backward(outputs, grads)
    return y.detach(), h.detach(), h_hat.detach(), [None if t is None else t.grad for t in leaves]


def _assert_rounded_sum(residual_out, x, residual, dtype):
    """residual_out == x + residual added in fp32 and rounded to `dtype`.

    Triton's interpreter (triton 3.6) casts fp32 → bf16 by truncation, not round-to-nearest-even
    as compiled kernels do, so under it either neighbour of the fp32 sum is accepted for bf16."""
    exact = x.float() + residual.float()
    nearest = exact.to(dtype)
    ok = residual_out == nearest
    if interpret() and dtype == torch.bfloat16:
        truncated = (exact.view(torch.int32) & ~0xFFFF).view(torch.float32).to(dtype)
        ok |= residual_out == truncated
    assert ok.all(), f"residual_out: {(~ok).sum().item()} elements are not x + residual rounded to {dtype}"


# ----------------------------------------------------------------------------- the case matrix
@dataclasses.dataclass(frozen=True)
class Case:
    norm: str  # "rms" | "ln"
    dtype: str  # x's dtype
    weight: bool = False
    bias: bool = False
    residual: Optional[str] = None  # None, "same" (x's dtype) or "fp32"
    prenorm: bool = False
    offset: bool = False  # weight_offset = 1.0 (Gemma's 1 + w)
    mixed: bool = False  # weight and bias in float32 while x is 16-bit
    out: Optional[str] = None  # out_dtype
    rd: Optional[str] = None  # residual_dtype
    heads: bool = False  # per-head (H, D) weight/bias with x (B, S, H, D)

    _FLAGS = {"w": ("weight", True), "b": ("bias", True), "res": ("residual", "same"),
              "res32": ("residual", "fp32"), "pre": ("prenorm", True), "off": ("offset", True),
              "mixed": ("mixed", True), "heads": ("heads", True)}

    @classmethod
    def parse(cls, spec: str) -> "Case":
        """'rms bf16 w res pre out=fp32' → Case(norm='rms', dtype='bf16', weight=True, ...)."""
        norm, dtype, *tokens = spec.split()
        fields = {}
        for token in tokens:
            key, _, value = token.partition("=")
            fields.update([cls._FLAGS[token]] if not value else [(key, value)])
        return cls(norm, dtype, **fields)

    def is_valid(self) -> bool:
        """Combinations that mean something (prenorm needs a residual, weight_offset a weight, …)."""
        return not ((self.prenorm and not self.residual) or (self.rd and not self.residual)
                    or (self.offset and (self.norm != "rms" or not self.weight))
                    or (self.mixed and (self.dtype == "fp32" or not (self.weight or self.bias)))
                    or (self.residual == "fp32" and self.dtype == "fp32")
                    or (self.heads and not (self.weight or self.bias)))

    def h_dtype(self) -> str:
        """dtype of h = x + residual as saved for the backward (residual_out's)."""
        return self.rd or ("fp32" if self.residual == "fp32" else self.dtype)


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


def _make_case_inputs(case: Case, shape, device, seed=0):
    """x, weight, bias, residual in the case's dtypes; dy in y's dtype, dresidual_out in residual_out's."""
    g = torch.Generator().manual_seed(seed)
    rand = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    x_dtype = DTYPES[case.dtype]
    param_dtype = torch.float32 if case.mixed else x_dtype
    param_shape = shape[-2:] if case.heads else shape[-1:]
    x = rand(*shape)
    weight = bias = residual = dresidual_out = None
    if case.weight:  # around 1 (around 0 with weight_offset = 1: the effective scale is w + 1)
        weight = (0.0 if case.offset else 1.0) + 0.5 * rand(*param_shape)
    if case.bias:
        bias = 0.5 * rand(*param_shape)
    if case.residual:
        residual = rand(*shape).to(torch.float32 if case.residual == "fp32" else x_dtype)
    dy = 0.5 * x + rand(*shape)
    if case.prenorm:
        dresidual_out = rand(*shape).to(device=device, dtype=DTYPES[case.h_dtype()])
    cast = lambda t, dtype: None if t is None else t.to(device=device, dtype=dtype)  # noqa: E731
    y_dtype = DTYPES[case.out] if case.out else x_dtype
    return (cast(x, x_dtype), cast(weight, param_dtype), cast(bias, param_dtype),
            None if residual is None else residual.to(device), cast(dy, y_dtype), dresidual_out)


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


# ----------------------------------------------------------------------------- gradcheck (float64)
def _f64(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def test_gradcheck_layer_norm_weight_bias(device):
    x, w, b = (_f64(*s, seed=i).to(device).requires_grad_() for i, s in enumerate([(3, 7), (7,), (7,)]))
    assert torch.autograd.gradcheck(lambda *a: normkit.layer_norm(*a, eps=1e-5), (x, w, b))


def test_gradcheck_rms_norm_residual_prenorm(device):
    """Both outputs (y and residual_out) and all four inputs, with a weight offset."""
    x, w, b, r = (_f64(*s, seed=10 + i).to(device).requires_grad_()
                  for i, s in enumerate([(3, 7), (7,), (7,), (3, 7)]))
    assert torch.autograd.gradcheck(
        lambda *a: normkit.rms_norm(*a, eps=1e-5, prenorm=True, weight_offset=0.5), (x, w, b, r))


def test_gradcheck_layer_norm_residual(device):
    x, w, b, r = (_f64(*s, seed=20 + i).to(device).requires_grad_()
                  for i, s in enumerate([(3, 7), (7,), (7,), (3, 7)]))
    assert torch.autograd.gradcheck(lambda *a: normkit.layer_norm(*a, eps=1e-5), (x, w, b, r))


def test_gradcheck_per_head(device):
    x, w, b = (_f64(*s, seed=30 + i).to(device).requires_grad_() for i, s in enumerate([(2, 2, 4), (2, 4), (2, 4)]))
    assert torch.autograd.gradcheck(lambda *a: normkit.layer_norm(*a, eps=1e-5), (x, w, b))


# ----------------------------------------------------------------------------- modules
@pytest.mark.parametrize("normalized_shape", [64, (4, 16)], ids=["int", "tuple"])
@pytest.mark.parametrize("affine,bias", [(True, True), (True, False), (False, False)],
                         ids=["affine", "no_bias", "no_affine"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layer_norm_module_matches_torch(normalized_shape, affine, bias, dtype, device):
    """normkit.LayerNorm against torch.nn.LayerNorm run in float64 on the same parameters."""
    torch.manual_seed(0)
    ours = normkit.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=affine, bias=bias,
                             device=device, dtype=dtype)
    assert isinstance(ours, torch.nn.LayerNorm)
    with torch.no_grad():
        for p in ours.parameters():
            p.copy_(1.0 + 0.5 * torch.randn_like(p))
    theirs = torch.nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=affine, bias=bias,
                                dtype=torch.float64)
    theirs.load_state_dict({k: v.double().cpu() for k, v in ours.state_dict().items()})
    tail = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
    x = torch.randn(3, 5, *tail, device=device, dtype=dtype)
    dy = torch.randn_like(x)
    xa, xb = x.clone().requires_grad_(), x.double().cpu().requires_grad_()
    ya, yb = ours(xa), theirs(xb)
    ya.backward(dy)
    yb.backward(dy.double().cpu())
    assert ya.dtype == dtype and ya.shape == x.shape
    assert_matches(ya, yb, dtype, "y")
    assert_matches(xa.grad, xb.grad, dtype, "dx")
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        assert p.grad.dtype == dtype
        assert_matches(p.grad, q.grad, dtype, f"d{name}")
    assert len(list(ours.parameters())) == (1 + bias if affine else 0)


@pytest.mark.parametrize("weight_offset", [0.0, 1.0])
@pytest.mark.parametrize("dtype,residual_dtype", [(torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16),
                                                  (torch.bfloat16, torch.float32)])
def test_fused_add_rms_norm_module(weight_offset, dtype, residual_dtype, device):
    norm = normkit.FusedAddRMSNorm(96, eps=1e-6, weight_offset=weight_offset, device=device, dtype=dtype)
    init = torch.zeros if weight_offset else torch.ones  # (1 + w) starts at w = 0: the identity scale
    assert torch.equal(norm.weight.detach(), init(96, device=device, dtype=dtype))
    assert f"weight_offset={weight_offset}" in repr(norm)
    with torch.no_grad():
        norm.weight.add_(0.5 * torch.randn(96, device=device, dtype=dtype))
    g = torch.Generator().manual_seed(4)
    x = torch.randn(4, 6, 96, generator=g).to(device=device, dtype=dtype).requires_grad_()
    residual = torch.randn(4, 6, 96, generator=g).to(device=device, dtype=residual_dtype).requires_grad_()
    dy = torch.randn(4, 6, 96, generator=g).to(device=device, dtype=dtype)
    dresidual_out = torch.randn(4, 6, 96, generator=g).to(device=device, dtype=residual_dtype)
    y, residual_out = norm(x, residual)
    torch.autograd.backward([y, residual_out], [dy, dresidual_out])
    y_ref, _, _, (dx_ref, dw_ref, _, dres_ref) = _reference(
        x, norm.weight, None, residual, dy, dresidual_out, rms=True, eps=1e-6, weight_offset=weight_offset)
    assert y.dtype == dtype and residual_out.dtype == residual_dtype
    _assert_rounded_sum(residual_out, x, residual, residual_dtype)
    assert_matches(y, y_ref, dtype, "y")
    assert_matches(x.grad, dx_ref, _coarsest(residual_dtype, dtype), "dx")
    assert_matches(residual.grad, dres_ref, _coarsest(residual_dtype, dtype), "dresidual")
    assert_matches(norm.weight.grad, dw_ref, _coarsest(residual_dtype, dtype), "dweight")


# ----------------------------------------------------------------------------- low-level entry points
def _lowlevel(rms):
    return (normkit.rms_norm_fwd, normkit.rms_norm_bwd) if rms else (normkit.layer_norm_fwd, normkit.layer_norm_bwd)


def _stats_args(fwd_outputs, rms):
    """The saved statistics as the backward takes them: (rstd,) or (mean, rstd)."""
    return (fwd_outputs[2],) if rms else tuple(fwd_outputs[2:])


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "ln"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("saved", [True, False], ids=["saved", "recompute"])
def test_lowlevel_backward_with_residual_and_bias(rms, dtype, saved, device):
    """bwd(residual_out, …, dresidual_out): dx includes dresidual_out, dresidual IS dx, dbias = Σ dy."""
    fwd, bwd = _lowlevel(rms)
    g = torch.Generator().manual_seed(5)
    x, residual, dy, dresidual_out = (torch.randn(16, 100, generator=g).to(device, dtype) for _ in range(4))
    weight, bias = (torch.randn(100, generator=g).to(device, dtype) for _ in range(2))
    outputs = fwd(x, weight, bias, residual, store_rstd=saved)
    out, residual_out = outputs[:2]
    _assert_rounded_sum(residual_out, x, residual, dtype)
    stats = _stats_args(outputs, rms) if saved else ()
    dx, dweight, dbias, dresidual = bwd(residual_out, weight, dy, *stats, dresidual_out=dresidual_out,
                                        has_bias=True, has_residual=True)
    assert dresidual is dx
    assert dx.dtype == dtype and dweight.dtype == dtype and dbias.dtype == dtype
    # The backward's input is residual_out itself: the reference differentiates at that point.
    y_ref, _, _, (dh_ref, dw_ref, db_ref, _) = _reference(residual_out, weight, bias, None, dy, rms=rms,
                                                          eps=1e-6 if rms else 1e-5)
    assert_matches(out, _reference(x, weight, bias, residual, dy, rms=rms, eps=1e-6 if rms else 1e-5)[0],
                   dtype, "y")
    assert_matches(dx, dh_ref + dresidual_out.double().cpu(), dtype, "dx")
    assert_matches(dweight, dw_ref, dtype, "dweight")
    assert_matches(dbias, dy.double().sum(0), dtype, "dbias = Σ dy")
    # Without has_residual / dresidual_out: no dresidual, and dx is the norm's gradient alone.
    dx2, _, dbias2, dresidual2 = bwd(residual_out, weight, dy, *stats)
    assert dresidual2 is None and dbias2 is None
    assert_matches(dx2, dh_ref, dtype, "dx without dresidual_out")


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "ln"])
@pytest.mark.parametrize("n", [100, 70000])
def test_lowlevel_saved_and_recomputed_statistics_agree(rms, n, device):
    fwd, bwd = _lowlevel(rms)
    m = 2 if n > 65536 else 24
    g = torch.Generator().manual_seed(6)
    x, dy = (3.0 + torch.randn(m, n, generator=g).to(device) for _ in range(2))  # a non-zero mean
    weight, bias = (torch.randn(n, generator=g).to(device) for _ in range(2))
    stats = _stats_args(fwd(x, weight, bias, store_rstd=True), rms)
    assert all(s.shape == (m,) and s.dtype == torch.float32 for s in stats)
    assert fwd(x, weight)[2] is None  # nothing stored without store_rstd
    saved = bwd(x, weight, dy, *stats, has_bias=True)
    recomputed = bwd(x, weight, dy, has_bias=True)
    for a, b in zip(saved[:3], recomputed[:3]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    # The saved statistics are really used: a different rstd gives a different dx.
    doubled = stats[:-1] + (stats[-1] * 2,)
    assert not torch.allclose(bwd(x, weight, dy, *doubled)[0], saved[0])


def test_lowlevel_residual_dtype_without_residual(device):
    x = torch.randn(4, 32, device=device, dtype=torch.bfloat16)
    out, residual_out, _ = normkit.rms_norm_fwd(x, residual_dtype=torch.float32, out_dtype=torch.float32)
    assert out.dtype == torch.float32 and residual_out.dtype == torch.float32
    assert torch.equal(residual_out, x.float())
    assert normkit.rms_norm_fwd(x)[1] is x
    out, residual_out, mean, rstd = normkit.layer_norm_fwd(x)
    assert residual_out is x and mean is None and rstd is None


def test_lowlevel_weight_offset(device):
    """rms_norm_bwd(weight_offset=1): dx uses w + 1, dweight is bitwise the one without the offset."""
    g = torch.Generator().manual_seed(7)
    x, dy = (torch.randn(12, 80, generator=g).to(device) for _ in range(2))
    weight = 0.5 * torch.randn(80, generator=g).to(device)
    out, _, rstd = normkit.rms_norm_fwd(x, weight, store_rstd=True, weight_offset=1.0)
    y_ref, _, _, (dx_ref, dw_ref, _, _) = _reference(x, weight, None, None, dy, rms=True, eps=1e-6,
                                                     weight_offset=1.0)
    assert_matches(out, y_ref, torch.float32, "y")
    dx, dweight, _, _ = normkit.rms_norm_bwd(x, weight, dy, rstd, weight_offset=1.0)
    assert_matches(dx, dx_ref, torch.float32, "dx")
    assert_matches(dweight, dw_ref, torch.float32, "dweight")
    assert torch.equal(dweight, normkit.rms_norm_bwd(x, weight, dy, rstd)[1])


# ----------------------------------------------------------------------------- per-head weights
def _per_head_reference(x, weight, bias, rms, eps):
    """Each head h normalised on its own and scaled by weight[h] (+ bias[h]), head by head."""
    heads = []
    for h in range(x.shape[-2]):
        xh = x[..., h, :].double().cpu()
        centered = xh if rms else xh - xh.mean(-1, keepdim=True)
        yh = centered * torch.rsqrt(centered.square().mean(-1, keepdim=True) + eps) * weight[h].double().cpu()
        heads.append(yh if bias is None else yh + bias[h].double().cpu())
    return torch.stack(heads, dim=-2)


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "ln"])
def test_per_head_weights(rms, device):
    B, S, H, D = 2, 3, 4, 64
    g = torch.Generator().manual_seed(8)
    x = torch.randn(B, S, H, D, generator=g).to(device).requires_grad_()
    weight = (torch.arange(1, H + 1, dtype=torch.float32)[:, None] + torch.randn(H, D, generator=g)).to(device)
    bias = None if rms else torch.randn(H, D, generator=g).to(device).requires_grad_()
    weight.requires_grad_()
    dy = torch.randn(B, S, H, D, generator=g).to(device)
    eps = 1e-6 if rms else 1e-5
    fn = normkit.rms_norm if rms else normkit.layer_norm
    y = fn(x, weight, bias, eps=eps)
    y.backward(dy)
    assert_matches(y, _per_head_reference(x, weight, bias, rms, eps), torch.float32, "y")
    _, _, _, (dx_ref, dw_ref, db_ref, _) = _reference(x, weight, bias, None, dy, rms=rms, eps=eps)
    assert weight.grad.shape == (H, D)
    assert_matches(x.grad, dx_ref, torch.float32, "dx")
    assert_matches(weight.grad, dw_ref, torch.float32, "dweight")
    if not rms:
        assert bias.grad.shape == (H, D)
        assert_matches(bias.grad, dy.double().sum((0, 1)), torch.float32, "dbias")
    # The same through the low-level entry points.
    fwd, bwd = _lowlevel(rms)
    outputs = fwd(x.detach(), weight.detach(), None if bias is None else bias.detach(), store_rstd=True)
    assert torch.equal(outputs[0], y.detach())
    dx, dweight, dbias, _ = bwd(x.detach(), weight.detach(), dy, *_stats_args(outputs, rms), has_bias=not rms)
    assert dweight.shape == (H, D)
    assert_matches(dx, dx_ref, torch.float32, "low-level dx")
    assert_matches(dweight, dw_ref, torch.float32, "low-level dweight")
    if not rms:
        assert_matches(dbias, db_ref, torch.float32, "low-level dbias")


def test_torch_compile_fullgraph_with_new_arguments(device):
    """Residual, prenorm, bias, weight offset, out/residual dtypes and per-head weights under
    torch.compile(fullgraph=True): no graph break, same values as eager, forward and backward."""
    backend = "inductor" if device == "cuda" else "aot_eager"  # CPU: no C++ build needed
    case = Case.parse("rms bf16 w b res pre off mixed out=fp32 rd=fp32 heads")
    x, weight, bias, residual, dy, dresidual_out = _make_case_inputs(case, (2, 3, 4, 64), device, seed=9)

    def f(x, weight, bias, residual):
        y, h = normkit.rms_norm(x * 2.0, weight, bias, residual, eps=1e-6, prenorm=True, weight_offset=1.0,
                                out_dtype=torch.float32, residual_dtype=torch.float32)
        return y * 3.0, h

    compiled = torch.compile(f, fullgraph=True, backend=backend)
    runs = []
    for fn in (compiled, f):
        leaves = [t.clone().requires_grad_() for t in (x, weight, bias, residual)]
        y, h = fn(*leaves)
        torch.autograd.backward([y, h], [dy, dresidual_out])
        runs.append([y, h] + [t.grad for t in leaves])
    for name, a, b in zip(["y", "residual_out", "dx", "dweight", "dbias", "dresidual"], *runs):
        assert a.dtype == b.dtype, name
        torch.testing.assert_close(a, b, msg=name)
    assert runs[0][3].shape == (4, 64)


# ----------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("kind", ["ln_bias", "per_head"])
def test_parameter_gradients_are_bitwise_deterministic(kind, device):
    """Several backward programs own rows here (row blocks > 1 per head); their partial sums are
    reduced in a fixed order, so dweight and dbias repeat bit for bit."""
    g = torch.Generator().manual_seed(10)
    if kind == "ln_bias":
        shape, param_shape, fn = (300, 1000), (1000,), normkit.layer_norm
    else:
        shape, param_shape, fn = (3, 50, 2, 1000), (2, 1000), normkit.rms_norm
    x = torch.randn(*shape, generator=g).to(device=device, dtype=torch.bfloat16)
    residual = torch.randn(*shape, generator=g).to(device=device, dtype=torch.bfloat16)
    weight, bias = (torch.randn(*param_shape, generator=g).to(device) for _ in range(2))
    dy = torch.randn(*shape, generator=g).to(device=device, dtype=torch.bfloat16)
    runs = []
    for _ in range(3):
        leaves = [t.clone().requires_grad_() for t in (x, weight, bias, residual)]
        fn(*leaves).backward(dy)
        runs.append([t.grad for t in leaves])
    for again in runs[1:]:
        for name, a, b in zip(["dx", "dweight", "dbias", "dresidual"], runs[0], again):
            assert torch.equal(a, b), f"{name} differs between runs"
