"""Bad input: a clear ValueError/TypeError naming the argument, what was expected and what was given,
raised before anything is allocated or written."""

import pytest
import torch

import normkit


def _inputs(device, m=4, n=8, dtype=torch.float32):
    return (torch.randn(m, n, device=device, dtype=dtype), torch.randn(n, device=device, dtype=dtype),
            torch.randn(m, n, device=device, dtype=dtype))


@pytest.mark.parametrize("fn", ["rms_norm", "rms_norm_fwd"])
@pytest.mark.parametrize("case,exc,pattern", [
    ("int_x", TypeError, r"x must have a floating dtype .* got torch.int64"),
    ("list_x", TypeError, r"x must be a torch.Tensor, got list"),
    ("int_weight", TypeError, r"weight must have a floating dtype .* got torch.int32"),
    ("weight_shape", ValueError, r"weight must have shape \(8,\), got \(7,\)"),
    ("weight_2d", ValueError, r"weight of shape \(1, 8\) is a per-head \(H, N\) parameter and needs x of "
                              r"shape \(\.\.\., 1, 8\), got \(4, 8\)"),
    ("weight_3d", ValueError, r"weight must have shape \(8,\), got \(1, 1, 8\)"),
    ("eps_negative", ValueError, r"eps must be a finite number >= 0, got -1e-06"),
    ("eps_nan", ValueError, r"eps must be a finite number >= 0, got nan"),
    ("eps_inf", ValueError, r"eps must be a finite number >= 0, got inf"),
    ("eps_str", TypeError, r"eps must be a float, got str"),
    ("scalar_x", ValueError, r"x must have at least one dimension"),
    ("empty_row", ValueError, r"x's last dimension N must be >= 1, got shape \(4, 0\)"),
])
def test_forward_bad_input(fn, case, exc, pattern, device):
    x, w, _ = _inputs(device)
    eps = 1e-6
    if case == "int_x":
        x = torch.ones(4, 8, dtype=torch.int64, device=device)
    elif case == "list_x":
        x = [[1.0] * 8]
    elif case == "int_weight":
        w = torch.ones(8, dtype=torch.int32, device=device)
    elif case == "weight_shape":
        w = w[:7]
    elif case == "weight_2d":
        w = w.view(1, 8)
    elif case == "weight_3d":
        w = w.view(1, 1, 8)
    elif case == "eps_negative":
        eps = -1e-6
    elif case == "eps_nan":
        eps = float("nan")
    elif case == "eps_inf":
        eps = float("inf")
    elif case == "eps_str":
        eps = "1e-6"
    elif case == "scalar_x":
        x = torch.tensor(1.0, device=device)
    elif case == "empty_row":
        x = torch.empty(4, 0, device=device)
    with pytest.raises(exc, match=pattern):
        getattr(normkit, fn)(x, w, eps=eps)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device: CUDA")
def test_weight_on_another_device():
    x, w, _ = _inputs("cuda")
    with pytest.raises(ValueError, match=r"weight must be on x's device \(cuda:0\), got cpu"):
        normkit.rms_norm(x, w.cpu())


def test_weight_on_another_device_meta():
    """Device mismatch checked with the meta device, so it is exercised on CPU-only machines too."""
    x = torch.randn(4, 8)
    w = torch.empty(8, device="meta")
    with pytest.raises(ValueError, match=r"weight must be on x's device \(cpu\), got meta"):
        normkit.rms_norm(x, w)
    with pytest.raises(ValueError, match=r"dout must be on x's device \(cpu\), got meta"):
        normkit.rms_norm_bwd(x, None, torch.empty(4, 8, device="meta"))


@pytest.mark.parametrize("case,exc,pattern", [
    ("dout_shape", ValueError, r"dout must have shape \(4, 8\), got \(4, 7\)"),
    ("dout_int", TypeError, r"dout must have a floating dtype .* got torch.int64"),
    ("dout_none", TypeError, r"dout must be a torch.Tensor, got NoneType"),
    ("rstd_shape", ValueError, r"rstd must have shape \(4,\), got \(3,\)"),
    ("rstd_2d", ValueError, r"rstd must have shape \(4,\), got \(4, 1\)"),
    ("rstd_dtype", TypeError, r"rstd must have dtype torch.float32 .* got torch.bfloat16"),
    ("rstd_int", TypeError, r"rstd must have a floating dtype .* got torch.int32"),
    ("weight_shape", ValueError, r"weight must have shape \(8,\), got \(9,\)"),
    ("eps_nan", ValueError, r"eps must be a finite number >= 0, got nan"),
])
def test_backward_bad_input(case, exc, pattern, device):
    x, w, dy = _inputs(device)
    rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)[2]
    eps = 1e-6
    if case == "dout_shape":
        dy = dy[:, :7]
    elif case == "dout_int":
        dy = torch.ones(4, 8, dtype=torch.int64, device=device)
    elif case == "dout_none":
        dy = None
    elif case == "rstd_shape":
        rstd = rstd[:3]
    elif case == "rstd_2d":
        rstd = rstd.view(4, 1)
    elif case == "rstd_dtype":
        rstd = rstd.bfloat16()
    elif case == "rstd_int":
        rstd = torch.ones(4, dtype=torch.int32, device=device)
    elif case == "weight_shape":
        w = torch.randn(9, device=device)
    elif case == "eps_nan":
        eps = float("nan")
    with pytest.raises(exc, match=pattern):
        normkit.rms_norm_bwd(x, w, dy, rstd, eps=eps)


def test_float64_input_expects_float64_rstd(device):
    x, w, dy = _inputs(device, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"rstd must have dtype torch.float64"):
        normkit.rms_norm_bwd(x, w, dy, torch.ones(4, device=device))


def test_module_bad_input(device):
    norm = normkit.RMSNorm(8, device=device)
    with pytest.raises(TypeError, match=r"x must be a torch.Tensor, got list"):
        norm([1.0] * 8)
    with pytest.raises(ValueError, match=r"normalized_shape=\(8,\), got shape \(2, 4\)"):
        norm(torch.randn(2, 4, device=device))
    with pytest.raises(TypeError, match=r"x must have a floating dtype"):
        norm(torch.ones(2, 8, dtype=torch.int64, device=device))


@pytest.mark.parametrize("value", [True, False])
def test_check_bool_takes_bools(value):
    from normkit.validation import check_bool

    assert check_bool("prenorm", value) is value


def test_check_bool_takes_numpy_bools():
    np = pytest.importorskip("numpy")
    from normkit.validation import check_bool

    assert check_bool("store_rstd", np.True_) is True and check_bool("store_rstd", np.bool_(False)) is False


@pytest.mark.parametrize("name,value,given", [
    ("prenorm", "no", r"str 'no'"),  # truthy: would have acted as True
    ("prenorm", "", r"str ''"),
    ("store_rstd", 1, r"int 1"),
    ("has_bias", 0, r"int 0"),
    ("has_residual", None, r"NoneType None"),
    ("has_bias", 1.0, r"float 1.0"),
    ("store_rstd", torch.tensor(True), r"Tensor tensor\(True\)"),
    ("prenorm", "x" * 100, r"str 'x{36}\.\.\."),  # long values cut short
])
def test_check_bool_rejects_everything_else(name, value, given):
    from normkit.validation import check_bool

    with pytest.raises(TypeError, match=rf"^{name} must be a bool \(True or False\), got {given}$"):
        check_bool(name, value)


@pytest.mark.parametrize("call, message", [
    (lambda x, w: normkit.rms_norm(x, (8,), w), r"weight must be .* got tuple \(normkit takes no normalized_shape"),
    (lambda x, w: normkit.layer_norm(x, [8], w), r"weight must be .* got list \(normkit takes no normalized_shape"),
    (lambda x, w: normkit.rms_norm(x, w, 1e-6), r"bias must be .* got float \(eps is keyword-only"),
    (lambda x, w: normkit.layer_norm(x, w, w, 1e-5), r"residual must be .* got float \(eps is keyword-only"),
])
def test_calls_written_like_torchs_get_a_hint(call, message):
    """F.rms_norm(x, normalized_shape, weight, eps) order, used with normkit: the error says what to change."""
    with pytest.raises(TypeError, match=message):
        call(torch.randn(4, 8), torch.ones(8))


def test_eps_takes_numpy_floats():
    """A NumPy float eps (np.float32 is not a Python float) is a number like any other; bools are not."""
    np = pytest.importorskip("numpy")
    x = torch.randn(4, 8, dtype=torch.float64)
    for eps in (np.float32(1e-3), np.float16(1e-3), np.float64(1e-3)):
        torch.testing.assert_close(normkit.rms_norm(x, eps=eps), torch.nn.functional.rms_norm(x, (8,), eps=float(eps)),
                                   rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match="eps must be a float, got bool"):
        normkit.rms_norm(x, eps=np.True_)
