"""Down-casts to bfloat16 and float16 round to nearest even on CPU, as on the GPU (issue 52).

Triton 3.6's interpreter truncates float32 → bfloat16 (and mangles float64 → bfloat16, subnormal
ties and signalling NaNs); the GPU's cvt.rn rounds to nearest even, once, from float32 or float64.
normkit's interpreted launches replace the interpreter's cast for their duration
(`normkit._runtime.rounded_casts`, called by `normkit.launch`), so CPU results are the GPU's bits.
Expected values come from exact arithmetic (`_rounded`), checked against torch's `.to()` where torch
rounds once (from float32; from float64 torch rounds twice, through float32).
"""

import math
import warnings

import pytest
import torch
import triton
import triton.language as tl

import normkit
from normkit import _runtime
from normkit.launch import launch

INTERPRETED = not torch.cuda.is_available()
interpreter_only = pytest.mark.skipif(not INTERPRETED, reason="about Triton's CPU interpreter")
BLOCK = 1024
# (stored mantissa bits, least normal exponent, largest finite value)
FORMATS = {torch.bfloat16: (7, -126, (2 - 2 ** -7) * 2.0 ** 127), torch.float16: (10, -14, 65504.0)}


@triton.jit
def _cast_kernel(X, Y, n, BLOCK: tl.constexpr, IMPLICIT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    if not IMPLICIT:
        x = x.to(Y.dtype.element_ty)
    tl.store(Y + offs, x, mask=offs < n)  # (IMPLICIT: the store converts, as the kernels' y stores do)


def _cast(x, dtype, through_normkit=True, implicit=False):
    y = torch.empty(x.shape, dtype=dtype, device=x.device)
    grid = (triton.cdiv(x.numel(), BLOCK),)
    if through_normkit:
        launch(_cast_kernel, grid, x, y, x.numel(), BLOCK=BLOCK, IMPLICIT=implicit)
    else:  # Triton's own launch: the interpreter's casts as Triton ships them
        _cast_kernel[grid](x, y, x.numel(), BLOCK=BLOCK, IMPLICIT=implicit)
    return y


def _rounded(value: float, dtype) -> float:
    """`value` rounded to nearest (ties to even) in `dtype`, in exact arithmetic."""
    mantissa_bits, least_exponent, largest = FORMATS[dtype]
    if math.isnan(value) or math.isinf(value) or value == 0:
        return value
    _, e = math.frexp(value)  # |value| in [2^(e-1), 2^e)
    q = max(e - 1, least_exponent) - mantissa_bits  # the exponent of an ulp there (subnormals: fixed)
    out = math.ldexp(round(math.ldexp(value, -q)), q)  # (scaling by 2^q is exact; round() ties to even)
    if abs(out) > largest:
        return math.copysign(math.inf, value)
    return math.copysign(out, value)  # (−0 stays −0)


def _expected_bits(x, dtype):
    values = [_rounded(v, dtype) for v in x.tolist()]
    return torch.tensor(values, dtype=torch.float64).to(dtype).view(torch.int16)  # exact: representable


def _from_bits(bits):
    return torch.tensor([b - (1 << 32) if b >= 1 << 31 else b for b in bits], dtype=torch.int32).view(torch.float32)


# float32 bit patterns where truncation and rounding to nearest even differ, or that are special
SPECIAL = {
    torch.bfloat16: [0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0xBF818000,  # ties both ways, ±1 off
                     0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF,  # largest float32 → inf; the tie at bf16's largest
                     0x00000001, 0x00008000, 0x00018000, 0x00010000, 0x007FFFFF, 0x80000001,  # subnormals
                     0x00000000, 0x80000000, 0x7F800000, 0xFF800000,  # ±0, ±inf
                     0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF],  # NaNs: quiet, negative, signalling
    torch.float16: [0x3F801000, 0x3F803000, 0x3F801001, 0xBF803000,  # 1 + 2⁻¹¹ (tie), 1 + 3·2⁻¹¹ (tie), …
                    0x477FE000, 0x477FEFFF, 0x477FF000, 0x7F7FFFFF,  # 65504, just below the tie, 65520 → inf
                    0x33800000, 0x33000000, 0x33C00000, 0x33000001, 0xB2800000,  # 2⁻²⁴, ties 2⁻²⁵, 3·2⁻²⁵, −2⁻²⁶
                    0x00000000, 0x80000000, 0x7F800000, 0xFF800000,
                    0x7FC00000, 0xFFC00000, 0x7F800001],
}


def _float32_cases(dtype, device):
    g = torch.Generator().manual_seed(0)
    exponents = (-140, 128) if dtype == torch.bfloat16 else (-30, 17)
    spread = torch.randn(4096, generator=g) * torch.exp2(torch.randint(*exponents, (4096,), generator=g).float())
    ties = spread.view(torch.int32) & ~0xFFFF | 0x8000 if dtype == torch.bfloat16 else \
        spread.view(torch.int32) & ~0x1FFF | 0x1000  # exactly half an ulp of the 2-byte format below
    return torch.cat([_from_bits(SPECIAL[dtype]), spread, ties.view(torch.float32)]).to(device)


@pytest.mark.parametrize("implicit", [False, True], ids=["to", "store"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_float32_down_casts_round_to_nearest_even(dtype, implicit, device):
    x = _float32_cases(dtype, device)
    y = _cast(x, dtype, implicit=implicit).cpu()
    nan = torch.isnan(x.cpu())
    assert torch.isnan(y[nan]).all()
    assert torch.equal(y[~nan].view(torch.int16), _expected_bits(x.cpu()[~nan], dtype))
    assert torch.equal(y[~nan].view(torch.int16), x.cpu()[~nan].to(dtype).view(torch.int16))  # torch agrees
    if INTERPRETED:  # every NaN as the GPU's cvt.rn writes it (torch's CPU casts write 0x7FC0 or 0xFFFF)
        assert (y[nan].view(torch.int16) == 0x7FFF).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_float64_down_casts_round_once(dtype, device):
    """float64 → 2-byte rounds once (the GPU's cvt.rn.bf16.f64 / cvt.rn.f16.f64), not through float32:
    1 + half an ulp + 2⁻³⁰ rounds up, though its float32 (the tie itself) would round down to even."""
    half_ulp = 2.0 ** -(FORMATS[dtype][0] + 1)
    g = torch.Generator().manual_seed(1)
    nudged = (1 + torch.randint(0, 1 << 10, (512,), generator=g, dtype=torch.float64) * 2 * half_ulp + half_ulp) \
        * torch.exp2(torch.randint(-20, 12, (512,), generator=g).double())
    x = torch.cat([torch.tensor([1 + half_ulp + 2.0 ** -30, 1 + half_ulp - 2.0 ** -40, -(1 + half_ulp + 2.0 ** -30),
                                 1e300, -1e300, 1e-300, 0.0, -0.0, math.inf, -math.inf], dtype=torch.float64),
                   nudged + nudged * 2.0 ** -35, nudged - nudged * 2.0 ** -35, nudged,
                   torch.randn(1024, generator=g, dtype=torch.float64) * 100]).to(device)
    y = _cast(x, dtype).cpu()
    assert torch.equal(y.view(torch.int16), _expected_bits(x.cpu(), dtype))
    assert _rounded(1 + half_ulp + 2.0 ** -30, dtype) == 1 + 2 * half_ulp  # (the case torch double-rounds)


@interpreter_only
def test_triton_alone_truncates_and_normkit_launches_leave_it_so():
    """Without normkit's shim Triton 3.6's interpreter truncates to bfloat16 (so the tests above fail
    on it), and the shim is in place only inside normkit's launches: a kernel launched by Triton
    afterwards still gets the interpreter's own casts, and its builder holds no trace of the shim."""
    if not triton.__version__.startswith("3.6"):
        pytest.skip(f"the truncation is Triton 3.6's interpreter's; this is Triton {triton.__version__}")
    from triton.runtime.interpreter import interpreter_builder

    x = _float32_cases(torch.bfloat16, "cpu")
    nan = torch.isnan(x)
    rounded = _cast(x, torch.bfloat16)
    truncated = _cast(x, torch.bfloat16, through_normkit=False)
    assert "cast_impl" not in vars(interpreter_builder)
    assert torch.equal(rounded[~nan].view(torch.int16), x[~nan].to(torch.bfloat16).view(torch.int16))
    # truncation: a normal float32's top 16 bits (its subnormals come out otherwise wrong)
    normal = ~nan & (x.view(torch.int32) & 0x7F800000 != 0)
    assert torch.equal(truncated[normal].view(torch.int16), (x[normal].view(torch.int32) >> 16).to(torch.int16))
    assert (truncated.view(torch.int16) != rounded.view(torch.int16)).sum() > 1000  # the ties, at least


@interpreter_only
def test_shim_is_removed_when_a_launch_fails():
    from triton.runtime.interpreter import interpreter_builder

    with pytest.raises(Exception):
        launch(_cast_kernel, (1,), torch.ones(4), "not a tensor", 4, BLOCK=BLOCK, IMPLICIT=False)
    assert "cast_impl" not in vars(interpreter_builder)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("casting_mode", ["llama", "fp32"])
def test_rms_norm_is_bitwise_the_formula_given_its_rstd(dtype, casting_mode, device):
    """normkit.rms_norm is bitwise the Hugging Face formula (casting_mode "llama": x̂ rounded to x's dtype,
    then scaled; "fp32": rounded once at the end) evaluated with the rstd normkit computed. The rstd
    itself is a float32 sum over the row in the kernel's order: numpy's pairwise sum of the tile under
    the interpreter, a shuffle tree on the GPU, neither torch's `mean`: it can differ from torch's in
    its last bit or two (below)."""
    g = torch.Generator().manual_seed(2)
    for m, n in [(64, 4096), (33, 1000), (4, 8192)]:
        x = (torch.randn(m, n, generator=g) * 2).to(dtype).to(device)
        w = (1 + 0.1 * torch.randn(n, generator=g)).to(dtype).to(device)
        _, _, rstd = normkit.lowlevel.rms_norm_fwd(x, w, eps=1e-6, store_rstd=True)
        y = normkit.rms_norm(x, w, eps=1e-6, casting_mode=casting_mode)
        x_hat = x.float() * rstd[:, None]
        expected = w * x_hat.to(dtype) if casting_mode == "llama" else (x_hat * w.float()).to(dtype)
        assert torch.equal(y.view(torch.int16), expected.view(torch.int16)), (m, n)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_llama_casting_matches_hugging_face(dtype, device):
    """Against Hugging Face's LlamaRMSNorm formula with torch's own rstd: bitwise on every row whose
    rstd agrees with torch's (most), within 2 ulp of it elsewhere; before the shim, bf16 agreed in
    about a third of the elements."""
    g = torch.Generator().manual_seed(3)
    eps = 1e-6
    x = (torch.randn(128, 4096, generator=g) * 2).to(dtype).to(device)
    w = (1 + 0.1 * torch.randn(4096, generator=g)).to(dtype).to(device)
    y = normkit.rms_norm(x, w, eps=eps, casting_mode="llama")
    _, _, rstd = normkit.lowlevel.rms_norm_fwd(x, w, eps=eps, store_rstd=True)
    torch_rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    hf = w * (x.float() * torch_rstd).to(dtype)
    same = rstd == torch_rstd[:, 0]
    assert same.float().mean() > 0.5
    assert torch.equal(y[same].view(torch.int16), hf[same].view(torch.int16))
    assert (rstd.view(torch.int32) - torch_rstd[:, 0].view(torch.int32)).abs().max() <= 2
    assert (y.view(torch.int16) == hf.view(torch.int16)).float().mean() > 0.999


def test_float64_input_with_bfloat16_output_rounds_once(device):
    """rms_norm of float64 x into a bfloat16 y: y is the float64 result rounded once, as on the GPU
    (before the shim the interpreter's float64 → bfloat16 was replaced by a float32 stand-in, rounded twice)."""
    g = torch.Generator().manual_seed(4)
    x = torch.randn(16, 512, generator=g, dtype=torch.float64).to(device)
    w = (1 + 0.1 * torch.randn(512, generator=g, dtype=torch.float64)).to(device)
    y = normkit.rms_norm(x, w, out_dtype=torch.bfloat16)
    _, _, rstd = normkit.lowlevel.rms_norm_fwd(x, w, store_rstd=True)
    y64 = (x * rstd[:, None] * w).cpu()
    assert torch.equal(y.cpu().view(torch.int16), _expected_bits(y64.flatten(), torch.bfloat16).view(y.shape))


@pytest.fixture
def fresh_probe(monkeypatch):
    """`_runtime`'s probe of the interpreter, run again under the test's monkeypatches, then again after."""
    _runtime._interpreter_builder.cache_clear()
    yield monkeypatch
    monkeypatch.undo()
    _runtime._interpreter_builder.cache_clear()


@interpreter_only
def test_other_interpreter_internals_leave_casts_alone_quietly(fresh_probe):
    """Where the interpreter's builder is not what the shim was written against — no
    `interpreter_builder`, or a `create_fp_trunc` that does not go through `cast_impl` — nothing is
    patched and nothing is warned: launches keep the interpreter's own casts."""
    from triton.runtime import interpreter

    class OtherBuilder:
        def create_fp_trunc(self, src, dst_type):  # never asks cast_impl
            return interpreter.InterpreterBuilder.cast_impl(self, src, dst_type)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh_probe.setattr(interpreter, "interpreter_builder", OtherBuilder())
        assert not _runtime.interpreter_rounds_to_nearest()
        with _runtime.rounded_casts() as replaced:
            assert replaced is False
        _runtime._interpreter_builder.cache_clear()
        fresh_probe.delattr(interpreter, "interpreter_builder")
        assert not _runtime.interpreter_rounds_to_nearest()


@interpreter_only
def test_a_shim_that_does_not_round_is_not_installed(fresh_probe):
    """The probe checks the result, not only the names: a replacement that does not round (here: one
    that hands every cast back to the interpreter) is refused, and normkit's launches then give what
    Triton's own launches give, without a warning."""
    fresh_probe.setattr(_runtime, "_rounded_cast", lambda inner: inner)
    x = _float32_cases(torch.bfloat16, "cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _runtime.interpreter_rounds_to_nearest()
        through_normkit = _cast(x, torch.bfloat16)
    assert torch.equal(through_normkit.view(torch.int16), _cast(x, torch.bfloat16, through_normkit=False).view(torch.int16))
