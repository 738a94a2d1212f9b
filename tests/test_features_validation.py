"""Bad input to the residual / bias / prenorm / weight-offset / dtype / per-head features: a
ValueError or TypeError whose message names the argument, what was expected and what was given."""

import pytest
import torch

import normkit

FORWARDS = {"rms_norm": normkit.rms_norm, "layer_norm": normkit.layer_norm,
            "rms_norm_fwd": normkit.rms_norm_fwd, "layer_norm_fwd": normkit.layer_norm_fwd}
RMS_FORWARDS = {"rms_norm": normkit.rms_norm, "rms_norm_fwd": normkit.rms_norm_fwd}


def _inputs(device, shape=(4, 8), dtype=torch.float32):
    """x, weight, bias, residual of matching shapes (weight/bias (N,))."""
    return (torch.randn(shape, device=device, dtype=dtype), torch.randn(shape[-1], device=device, dtype=dtype),
            torch.randn(shape[-1], device=device, dtype=dtype), torch.randn(shape, device=device, dtype=dtype))


# ----------------------------------------------------------------------------- residual
@pytest.mark.parametrize("fn", FORWARDS.values(), ids=FORWARDS.keys())
@pytest.mark.parametrize("case,exc,pattern", [
    ("shape", ValueError, r"residual must have shape \(4, 8\), got \(4, 7\)"),
    ("broadcastable", ValueError, r"residual must have shape \(4, 8\), got \(8,\)"),
    ("device", ValueError, r"residual must be on x's device \(cpu\), got meta"),
    ("int", TypeError, r"residual must have a floating dtype .* got torch.int32"),
    ("list", TypeError, r"residual must be a torch.Tensor or None, got list"),
])
def test_bad_residual(fn, case, exc, pattern):
    x, weight, bias, residual = _inputs("cpu")  # the meta device stands for "another device" on CPU
    residual = {"shape": residual[:, :7], "broadcastable": residual[0],
                "device": torch.empty(4, 8, device="meta"), "int": residual.int(),
                "list": residual.tolist()}[case]
    with pytest.raises(exc, match=pattern):
        fn(x, weight, bias, residual)


# ----------------------------------------------------------------------------- bias and per-head parameters
@pytest.mark.parametrize("fn", FORWARDS.values(), ids=FORWARDS.keys())
@pytest.mark.parametrize("case,pattern", [
    ("bias_short", r"bias must have shape \(8,\), got \(7,\)"),
    ("bias_long_no_weight", r"bias must have shape \(8,\), got \(9,\)"),
    ("bias_flat_per_head_weight", r"bias must have weight's shape \(3, 8\), got \(8,\)"),
    ("bias_per_head_flat_weight", r"bias must have weight's shape \(8,\), got \(3, 8\)"),
    ("weight_heads", r"weight of shape \(4, 8\) is a per-head \(H, N\) parameter and needs x of shape "
                     r"\(\.\.\., 4, 8\), got \(2, 3, 8\)"),
    ("weight_head_dim", r"weight of shape \(3, 7\) is a per-head \(H, N\) parameter and needs x of shape "
                        r"\(\.\.\., 3, 7\), got \(2, 3, 8\)"),
    ("bias_heads", r"bias of shape \(2, 8\) is a per-head \(H, N\) parameter and needs x of shape "
                   r"\(\.\.\., 2, 8\), got \(2, 3, 8\)"),
    ("weight_heads_1d_x", r"weight of shape \(1, 8\) is a per-head \(H, N\) parameter and needs x of shape "
                          r"\(\.\.\., 1, 8\), got \(8,\)"),
])
def test_bad_bias_or_per_head_parameter(fn, case, pattern):
    x, weight, bias, _ = _inputs("cpu", (2, 3, 8))
    heads_weight, heads_bias = torch.randn(3, 8), torch.randn(3, 8)
    args = {
        "bias_short": (x, weight, bias[:7]),
        "bias_long_no_weight": (x, None, torch.randn(9)),
        "bias_flat_per_head_weight": (x, heads_weight, bias),
        "bias_per_head_flat_weight": (x, weight, heads_bias),
        "weight_heads": (x, torch.randn(4, 8), None),
        "weight_head_dim": (x, torch.randn(3, 7), None),
        "bias_heads": (x, None, torch.randn(2, 8)),
        "weight_heads_1d_x": (x[0, 0], torch.randn(1, 8), None),
    }[case]
    with pytest.raises(ValueError, match=pattern):
        fn(*args)


def test_bias_on_another_device():
    x, weight, _, _ = _inputs("cpu")
    with pytest.raises(ValueError, match=r"bias must be on x's device \(cpu\), got meta"):
        normkit.layer_norm(x, weight, torch.empty(8, device="meta"))


# ----------------------------------------------------------------------------- prenorm
@pytest.mark.parametrize("fn", [normkit.rms_norm, normkit.layer_norm], ids=["rms_norm", "layer_norm"])
def test_prenorm_without_residual(fn):
    x, weight, bias, _ = _inputs("cpu")
    with pytest.raises(ValueError, match=r"prenorm=True returns \(y, residual_out\) and needs a residual, "
                                         r"got residual=None"):
        fn(x, weight, bias, prenorm=True)


def test_fused_add_module_needs_a_residual():
    with pytest.raises(TypeError, match=r"residual must be a torch.Tensor of x's shape \(4, 8\), got list"):
        normkit.FusedAddRMSNorm(8)(torch.randn(4, 8), [0.0] * 8)
    with pytest.raises(TypeError, match=r"residual must be a torch.Tensor of x's shape \(4, 8\), got NoneType"):
        normkit.FusedAddRMSNorm(8)(torch.randn(4, 8), None)


# ----------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("fn", FORWARDS.values(), ids=FORWARDS.keys())
@pytest.mark.parametrize("case,pattern", [
    ("x64_weight32", r"unsupported dtype combination: x is torch.float64 but weight is torch.float32"),
    ("x64_bias16", r"unsupported dtype combination: x is torch.float64 but bias is torch.bfloat16"),
    ("x64_residual32", r"unsupported dtype combination: x is torch.float64 but residual is torch.float32"),
    ("x32_weight64", r"unsupported dtype combination: x is torch.float32 but weight is torch.float64"),
    ("x16_residual64", r"unsupported dtype combination: x is torch.bfloat16 but residual is torch.float64"),
])
def test_float64_mixed_with_lower_precision(fn, case, pattern):
    x64, w64, b64, r64 = _inputs("cpu", dtype=torch.float64)
    args = {
        "x64_weight32": (x64, w64.float(), None, None),
        "x64_bias16": (x64, w64, b64.bfloat16(), None),
        "x64_residual32": (x64, w64, b64, r64.float()),
        "x32_weight64": (x64.float(), w64, None, None),
        "x16_residual64": (x64.bfloat16(), None, None, r64),
    }[case]
    with pytest.raises(TypeError, match=pattern):
        fn(*args)


@pytest.mark.parametrize("fn", FORWARDS.values(), ids=FORWARDS.keys())
@pytest.mark.parametrize("name", ["out_dtype", "residual_dtype"])
@pytest.mark.parametrize("value,shown", [(torch.int32, "torch.int32"), (torch.bool, "torch.bool"),
                                         (torch.complex64, "torch.complex64"), ("float32", "float32")])
def test_out_and_residual_dtype_must_be_float(fn, name, value, shown):
    x, weight, bias, residual = _inputs("cpu")
    with pytest.raises(TypeError, match=rf"{name} must be None or one of float16, bfloat16, float32 or float64, "
                                        rf"got {shown}"):
        fn(x, weight, bias, residual, **{name: value})


# ----------------------------------------------------------------------------- weight_offset
WEIGHT_OFFSETS = [
    (float("nan"), ValueError, r"weight_offset must be a finite number, got nan"),
    (float("inf"), ValueError, r"weight_offset must be a finite number, got inf"),
    (float("-inf"), ValueError, r"weight_offset must be a finite number, got -inf"),
    ("1.0", TypeError, r"weight_offset must be a float, got str"),
    (None, TypeError, r"weight_offset must be a float, got NoneType"),
    (True, TypeError, r"weight_offset must be a float, got bool"),
    (torch.tensor(1.0), TypeError, r"weight_offset must be a float, got Tensor"),
]


@pytest.mark.parametrize("value,exc,pattern", WEIGHT_OFFSETS,
                         ids=["nan", "inf", "-inf", "str", "None", "bool", "tensor"])
def test_bad_weight_offset(value, exc, pattern):
    x, weight, _, residual = _inputs("cpu")
    for fn in RMS_FORWARDS.values():
        with pytest.raises(exc, match=pattern):
            fn(x, weight, residual=residual, weight_offset=value)
    with pytest.raises(exc, match=pattern):
        normkit.rms_norm_bwd(x, weight, torch.randn_like(x), weight_offset=value)
    with pytest.raises(exc, match=pattern):
        normkit.FusedAddRMSNorm(8, weight_offset=value)(x, residual)


def test_weight_offset_accepts_an_int():
    x, weight, _, _ = _inputs("cpu")
    assert torch.equal(normkit.rms_norm(x, weight, weight_offset=1), normkit.rms_norm(x, weight, weight_offset=1.0))


# ----------------------------------------------------------------------------- low-level backward
def test_layer_norm_bwd_needs_both_statistics_or_neither():
    x, weight, _, _ = _inputs("cpu")
    dy = torch.randn_like(x)
    _, _, mean, rstd = normkit.layer_norm_fwd(x, weight, store_rstd=True)
    with pytest.raises(ValueError, match=r"mean and rstd must be given together \(saved by layer_norm_fwd\) "
                                         r"or both be None \(recomputed\), got mean=None and rstd=a tensor"):
        normkit.layer_norm_bwd(x, weight, dy, rstd=rstd)
    with pytest.raises(ValueError, match=r"mean and rstd must be given together .* got mean=a tensor and rstd=None"):
        normkit.layer_norm_bwd(x, weight, dy, mean=mean)
    with pytest.raises(ValueError, match=r"mean must have shape \(4,\), got \(3,\)"):
        normkit.layer_norm_bwd(x, weight, dy, mean=mean[:3], rstd=rstd)


@pytest.mark.parametrize("fn", [normkit.rms_norm_bwd, normkit.layer_norm_bwd], ids=["rms_norm_bwd", "layer_norm_bwd"])
@pytest.mark.parametrize("case,exc,pattern", [
    ("dresidual_out_shape", ValueError, r"dresidual_out must have shape \(4, 8\), got \(4, 7\)"),
    ("dresidual_out_device", ValueError, r"dresidual_out must be on x's device \(cpu\), got meta"),
    ("dresidual_out_int", TypeError, r"dresidual_out must have a floating dtype .* got torch.int64"),
    ("per_head_weight", ValueError, r"weight of shape \(2, 8\) is a per-head \(H, N\) parameter"),
])
def test_bad_backward_input(fn, case, exc, pattern):
    x, weight, _, _ = _inputs("cpu")
    dy = torch.randn_like(x)
    kwargs = {}
    if case == "dresidual_out_shape":
        kwargs["dresidual_out"] = dy[:, :7]
    elif case == "dresidual_out_device":
        kwargs["dresidual_out"] = torch.empty(4, 8, device="meta")
    elif case == "dresidual_out_int":
        kwargs["dresidual_out"] = torch.ones(4, 8, dtype=torch.int64)
    elif case == "per_head_weight":
        weight = torch.randn(2, 8)
    with pytest.raises(exc, match=pattern):
        fn(x, weight, dy, **kwargs)


def test_errors_leave_caller_tensors_untouched():
    """Validation runs before anything is written: a rejected call changes none of its inputs."""
    x, weight, bias, residual = _inputs("cpu")
    before = [t.clone() for t in (x, weight, bias, residual)]
    with pytest.raises(ValueError):
        normkit.rms_norm(x, weight, bias[:7], residual, prenorm=True)
    with pytest.raises(TypeError):
        normkit.layer_norm(x, weight, bias, residual, residual_dtype=torch.int32)
    assert all(torch.equal(a, b) for a, b in zip(before, (x, weight, bias, residual)))


def test_weight_offset_needs_a_weight():
    x = torch.randn(3, 8)
    with pytest.raises(ValueError, match=r"weight_offset shifts the weight .* got weight=None with weight_offset=1.0"):
        normkit.rms_norm(x, None, weight_offset=1.0)
    with pytest.raises(ValueError, match=r"needs a weight"):
        normkit.rms_norm_fwd(x, None, weight_offset=1.0)
    assert normkit.rms_norm(x, None, weight_offset=0.0).shape == x.shape  # 0 is "no offset"


@pytest.mark.parametrize("fn", FORWARDS.values(), ids=FORWARDS.keys())
def test_float64_residual_dtype_needs_float64_inputs(fn):
    x, residual = torch.randn(3, 8), torch.randn(3, 8)
    with pytest.raises(TypeError, match=r"residual_dtype=torch.float64 with x of dtype torch.float32"):
        fn(x, None, None, residual, residual_dtype=torch.float64)
