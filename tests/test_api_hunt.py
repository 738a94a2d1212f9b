"""Bad input the first validation tests did not reach: tensors without strided storage, negative views,
arguments a call plan's lookup cannot hash, out-of-range numbers, empty normalized shapes,
FusedAddRMSNorm's constructor and the low-level device helpers. Each gets a TypeError/ValueError naming
the argument."""

import warnings

import pytest
import torch

import normkit
from normkit import lowlevel, ops


def _sparse(t):
    return t.to_sparse()


def _nested(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (torch: "the PyTorch API of nested tensors is in prototype")
        return torch.nested.nested_tensor(list(t))


@pytest.mark.parametrize("name,make,layout", [
    *((name, _sparse, "torch.sparse_coo") for name in ("x", "weight", "residual", "gate")),
    *((name, _nested, "a nested tensor") for name in ("x", "residual", "gate")),  # (nested: a batch of rows)
])
def test_tensors_without_strided_storage(name, make, layout):
    args = dict(x=torch.randn(4, 8), weight=torch.randn(8), residual=torch.randn(4, 8), gate=torch.randn(4, 8))
    args[name] = make(args[name])
    pattern = rf"{name} must be a dense \(strided\) tensor, got {layout}"
    with pytest.raises(TypeError, match=pattern):
        normkit.rms_norm(**args)
    with pytest.raises(TypeError, match=pattern):
        normkit.rms_norm_fwd(**args)


def test_backward_tensors_without_strided_storage():
    x, w, dout = torch.randn(4, 8), torch.randn(8), torch.randn(4, 8)
    with pytest.raises(TypeError, match=r"dout must be a dense \(strided\) tensor, got torch.sparse_coo"):
        normkit.rms_norm_bwd(x, w, dout.to_sparse())
    with pytest.raises(TypeError, match=r"rstd must be a dense \(strided\) tensor, got torch.sparse_coo"):
        normkit.rms_norm_bwd(x, w, dout, torch.ones(4).to_sparse())


@pytest.mark.parametrize("kwargs,exc,pattern", [
    (dict(eps=[1e-6]), TypeError, r"eps must be a float, got list"),
    (dict(weight_offset=[1.0]), TypeError, r"weight_offset must be a float, got list"),
    (dict(out_dtype=[torch.float16]), TypeError, r"out_dtype must be None or one of .* got \[torch.float16\]"),
    (dict(residual_dtype={}), TypeError, r"residual_dtype must be None or one of .* got \{\}"),
    (dict(casting_mode=["fp32"]), ValueError, r"casting_mode must be one of 'fp32', 'llama', got \['fp32'\]"),
])
def test_unhashable_arguments_are_named(kwargs, exc, pattern):
    """The call-plan lookup hashes the arguments: an unhashable one still gets validation's message."""
    with pytest.raises(exc, match=pattern):
        normkit.rms_norm(torch.randn(4, 8), torch.randn(8), **kwargs)


def test_an_eps_beyond_float_range_is_a_value_error():
    with pytest.raises(ValueError, match=r"^eps must be a finite number >= 0, got an int of 1329 bits, beyond"):
        normkit.rms_norm(torch.randn(4, 8), eps=10 ** 400)
    with pytest.raises(ValueError, match=r"^weight_offset must be a finite number, got an int of 16610 bits"):
        normkit.rms_norm(torch.randn(4, 8), torch.randn(8), weight_offset=-10 ** 5000)  # (too long for str())


@pytest.mark.parametrize("module", [normkit.RMSNorm, normkit.LayerNorm])
def test_modules_refuse_an_empty_normalized_shape(module):
    """torch.nn.RMSNorm(()) / LayerNorm(()) refuse it at the call; normalising over no dimension is not a norm."""
    norm = module(())
    with pytest.raises(ValueError, match=r"normalized_shape must have at least one dimension, got \(\)"):
        norm(torch.randn(3, 1))


@pytest.mark.parametrize("hidden_size,exc,pattern", [
    (0, ValueError, r"hidden_size must be >= 1, got 0"),
    (-1, ValueError, r"hidden_size must be >= 1, got -1"),
    (8.0, TypeError, r"hidden_size must be an int, got float"),
    ([8], TypeError, r"hidden_size must be an int, got list"),
    (True, TypeError, r"hidden_size must be an int, got bool"),
])
def test_fused_add_module_checks_hidden_size(hidden_size, exc, pattern):
    with pytest.raises(exc, match=pattern):
        normkit.FusedAddRMSNorm(hidden_size)


def test_fused_add_module_names_x_when_its_last_dimension_is_wrong():
    norm = normkit.FusedAddRMSNorm(8)
    with pytest.raises(ValueError, match=r"x must end with the dimensions normalized_shape=\(8,\), got shape \(2, 4\)"):
        norm(torch.randn(2, 4), torch.randn(2, 4))


@pytest.mark.parametrize("weight_offset", [0.0, 1.0])
def test_fused_add_module_resets_parameters_after_meta_init(weight_offset):
    """Meta-device construction then to_empty + reset_parameters (FSDP, accelerate): the weight is
    what the constructor makes (ones; zeros for Gemma's (1 + w))."""
    norm = normkit.FusedAddRMSNorm(8, weight_offset=weight_offset, device="meta").to_empty(device="cpu")
    norm.reset_parameters()
    assert torch.equal(norm.weight, torch.full((8,), 1.0 - weight_offset))


@pytest.mark.parametrize("fn", [lowlevel.backend, lowlevel.multiprocessors])
def test_device_helpers_name_a_bad_device(fn):
    with pytest.raises(ValueError, match=r"device must name a device \('cpu', 'cuda:0', \.\.\.\), got 'nonsense'"):
        fn("nonsense")
    with pytest.raises(TypeError, match=r"device must be a torch.device or a str, got int"):
        fn(3)


@pytest.mark.parametrize("n,exc,pattern", [
    (0, ValueError, r"n must be >= 1, got 0"),
    ("8", TypeError, r"n must be an int, got str"),
])
def test_tile_config_checks_n(n, exc, pattern):
    with pytest.raises(exc, match=pattern):
        lowlevel.tile_config(n, False, True)


def _neg_view(t):
    """t's negation as a view with the negative bit set, t's strides and memory (`z.conj().imag` of a
    complex z is one too, with other strides)."""
    assert torch.complex(t, t).conj().imag.is_neg()
    view = torch._neg_view(t)
    assert view.is_neg() and view.data_ptr() == t.data_ptr() and torch.equal(view, -t)
    return view


@pytest.mark.parametrize("name", ["x", "weight", "bias", "residual"])
@pytest.mark.usefixtures("plans_on")
def test_negative_views_are_refused_not_read_as_their_memory(name):
    """The kernels read memory; a negative view's memory holds the negated values. Refused on the
    first call, and still after the same call signature with plain tensors was planned."""
    args = dict(x=torch.randn(4, 8), weight=torch.randn(8), bias=torch.randn(8), residual=torch.randn(4, 8))
    normkit.layer_norm(**args)  # plans this signature (but for the negative bit)
    assert ops.plan_cache_info()["calls"]["size"] == 1
    args[name] = _neg_view(args[name])
    pattern = rf"{name} is a negative view \({name}.is_neg\(\), e.g. z.conj\(\).imag\): pass {name}.resolve_neg\(\)"
    for _ in range(2):
        with pytest.raises(TypeError, match=pattern):
            normkit.layer_norm(**args)
    with pytest.raises(TypeError, match=pattern):
        normkit.layer_norm_fwd(**args)
    resolved = {key: value.resolve_neg() for key, value in args.items()}
    torch.testing.assert_close(normkit.layer_norm(**resolved), torch.nn.functional.layer_norm(
        resolved["x"] + resolved["residual"], (8,), resolved["weight"], resolved["bias"]))


def test_a_gate_or_dout_negative_view_is_refused():
    x, w = torch.randn(4, 8), torch.randn(8)
    with pytest.raises(TypeError, match=r"gate is a negative view"):
        normkit.rms_norm(x, w, gate=_neg_view(torch.randn(4, 8)))
    with pytest.raises(TypeError, match=r"dout is a negative view"):
        normkit.rms_norm_bwd(x, w, _neg_view(torch.randn(4, 8)))

