"""normkit's modules, and modules `normkit.patch` rewrote, on DTensor inputs: 2 processes through
tests/test_distributed.py's harness (one spawn per backend), in float64 against the same computation
on the full plain tensors in one process:
  modules   RMSNorm, LayerNorm, FusedAddRMSNorm and RMSNorm over two trailing dimensions on
            Shard(0) / Shard(1) / Replicate x with plain Parameters; RMSNorm and LayerNorm under
            SequenceParallel (which makes the parameters Replicate DTensors)
  hf_llama  a tiny patched transformers Llama (float32) under a tensor + sequence parallel plan: its norms see
            Shard(1) DTensors (the final norm with a plain Parameter weight)
  errors    sharded normalised dimensions, Partial, mixed plain / DTensor, mesh and placement mismatches
"""

import pytest
import torch

from test_distributed import outcomes  # noqa: F401 (the fixture: one spawn per backend runs SCENARIOS below)

N = 16
TOL = {"atol": 1e-12, "rtol": 1e-12}  # float64 both ways; only the order of the weight-gradient sums differs


def _randn(*shape, seed, device):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(device)


def _randomise(module, device):
    """Non-trivial parameters (the same on every rank), so their gradients are tested."""
    with torch.no_grad():
        for seed, p in enumerate(module.parameters()):
            p.copy_(_randn(*p.shape, seed=100 + seed, device=device))
    return module


class _AddRMSNorm(torch.nn.Module):
    """FusedAddRMSNorm's meaning in torch ops: h = x + residual, (rms_norm(h)·weight, h)."""

    def __init__(self, module):
        super().__init__()
        self.weight = torch.nn.Parameter(module.weight.detach().clone())
        self.eps = module.eps

    def forward(self, x, residual):
        h = x + residual
        return torch.nn.functional.rms_norm(h, (h.shape[-1],), self.weight, self.eps), h


def _full(t):
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def _check(mesh, module, reference, shape, placement, n_inputs):
    """module on DTensors placed by `placement` against `reference` (the same parameters) on the full
    tensors: outputs and their placements, the gradients of the inputs and of every parameter, no
    collective in the forward and one all-reduce a parameter in the backward where x is sharded."""
    from torch.distributed.tensor import Replicate, distribute_tensor
    from torch.distributed.tensor.debug import CommDebugMode

    inputs = [_randn(*shape, seed=i, device=mesh.device_type) for i in range(n_inputs)]
    leaves = [t.clone().requires_grad_() for t in inputs]
    expected = reference(*leaves)
    expected = expected if isinstance(expected, tuple) else (expected,)
    douts = [_randn(*shape, seed=10 + i, device=mesh.device_type) for i in range(len(expected))]
    torch.autograd.backward(expected, douts)

    inputs_d = [distribute_tensor(t, mesh, [placement]).requires_grad_() for t in inputs]
    with CommDebugMode() as forward_comms:
        outputs = module(*inputs_d)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    assert forward_comms.get_total_counts() == 0, forward_comms.get_comm_counts()  # each rank its own rows
    douts_d = [distribute_tensor(d, mesh, [placement]) for d in douts]
    with CommDebugMode() as backward_comms:
        torch.autograd.backward(outputs, douts_d)
    reduced = 0 if isinstance(placement, Replicate) else len(list(module.parameters()))
    assert backward_comms.get_total_counts() == reduced, backward_comms.get_comm_counts()

    for out, ref in zip(outputs, expected):
        assert tuple(out.placements) == (placement,), out.placements
        torch.testing.assert_close(out.full_tensor(), ref.detach(), **TOL)
    for i, (t, leaf) in enumerate(zip(inputs_d, leaves)):
        torch.testing.assert_close(t.grad.full_tensor(), leaf.grad, **TOL, msg=lambda m: f"input {i}: {m}")
    parameters = dict(reference.named_parameters())
    for name, p in module.named_parameters():
        assert type(p.grad) is type(p.data), (name, type(p.grad))  # a plain Parameter gets a plain gradient
        torch.testing.assert_close(_full(p.grad), parameters[name].grad, **TOL, msg=lambda m: f"{name}: {m}")


def scenario_modules(rank, mesh):
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import SequenceParallel, parallelize_module

    import normkit

    device, f64 = mesh.device_type, {"device": mesh.device_type, "dtype": torch.float64}
    shape = (3, 5, N)  # B = 3, S = 5: uneven over 2 ranks
    for placement in (Shard(0), Shard(1), Replicate()):
        for make, torch_class in ((normkit.RMSNorm, torch.nn.RMSNorm), (normkit.LayerNorm, torch.nn.LayerNorm)):
            module = _randomise(make(N, eps=1e-6, **f64), device)
            reference = torch_class(N, eps=1e-6, **f64)
            reference.load_state_dict(module.state_dict())
            _check(mesh, module, reference, shape, placement, 1)
        module = _randomise(normkit.FusedAddRMSNorm(N, **f64), device)
        _check(mesh, module, _AddRMSNorm(module), shape, placement, 2)
        module = _randomise(normkit.RMSNorm((2, N // 2), **f64), device)  # reshaped to (..., N) inside
        reference = torch.nn.RMSNorm((2, N // 2), **f64)
        reference.load_state_dict(module.state_dict())
        _check(mesh, module, reference, (3, 5, 2, N // 2), placement, 1)
    for make, torch_class in ((normkit.RMSNorm, torch.nn.RMSNorm), (normkit.LayerNorm, torch.nn.LayerNorm)):
        module = _randomise(make(N, **f64), device)
        reference = torch_class(N, **f64)
        reference.load_state_dict(module.state_dict())
        parallelize_module(module, mesh, SequenceParallel())  # weight (and bias): Replicate DTensors
        assert all(type(p.data).__name__ == "DTensor" for p in module.parameters())
        _check(mesh, module, reference, shape, Shard(1), 1)


# ----------------------------------------------------------------------------- a patched Hugging Face Llama
LLAMA_TOL = {"atol": 1e-5, "rtol": 1e-5}  # float32: the tensor-parallel matmuls sum in another order


def _llama(device):
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=128, attn_implementation="eager")
    torch.manual_seed(0)
    return LlamaModel(config).to(device=device, dtype=torch.float32)  # (float64 runs Hugging Face's own norms)


def _sequence_parallel_plan(layers):
    """torchtitan's tensor + sequence parallel plan for Llama: the residual stream and the norms'
    inputs are Shard(1) DTensors. The final norm stays out of it, so its weight is a plain Parameter."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel)

    plan = {"embed_tokens": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1),
                                            use_local_output=False)}
    for i in range(layers):
        layer = f"layers.{i}."
        plan.update({
            layer + "input_layernorm": SequenceParallel(),
            layer + "post_attention_layernorm": SequenceParallel(),
            layer + "self_attn": PrepareModuleInput(input_kwarg_layouts={"hidden_states": Shard(1)},
                                                    desired_input_kwarg_layouts={"hidden_states": Replicate()}),
            layer + "mlp": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            **{layer + name: ColwiseParallel() for name in ("self_attn.q_proj", "self_attn.k_proj",
                                                            "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj")},
            **{layer + name: RowwiseParallel(output_layouts=Shard(1), use_local_output=False)
               for name in ("self_attn.o_proj", "mlp.down_proj")},
        })
    return plan


def scenario_hf_llama(rank, mesh):
    from torch.distributed.tensor import DTensor, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import parallelize_module

    import normkit
    import normkit.distributed

    device = mesh.device_type
    ids = torch.randint(0, 128, (2, 6), generator=torch.Generator().manual_seed(1)).to(device)
    dout = _randn(2, 6, 64, seed=2, device=device).float()

    reference = _llama(device)  # patched, one process: normkit's float32 on the full tensors
    normkit.patch(reference)
    expected = reference(ids).last_hidden_state
    expected.backward(dout)

    model = _llama(device)
    assert normkit.patch(model) == 5
    parallelize_module(model, mesh, _sequence_parallel_plan(len(model.layers)))
    routed = []
    apply = normkit.distributed.apply
    normkit.distributed.apply = lambda *args: routed.append(args[1].placements) or apply(*args)
    try:
        out = model(ids).last_hidden_state
    finally:
        normkit.distributed.apply = apply
    assert routed == [(Shard(1),)] * 5, routed  # every norm took its DTensor through normkit
    assert isinstance(out, DTensor) and tuple(out.placements) == (Shard(1),)
    out.backward(distribute_tensor(dout, mesh, [Shard(1)]))

    torch.testing.assert_close(out.full_tensor(), expected.detach(), **LLAMA_TOL)
    parameters = dict(reference.named_parameters())
    for name, p in model.named_parameters():
        torch.testing.assert_close(_full(p.grad), parameters[name].grad, **LLAMA_TOL,
                                   msg=lambda m: f"{name}: {m}")
    assert type(model.norm.weight.grad) is torch.Tensor


# ----------------------------------------------------------------------------- errors
def scenario_errors(rank, mesh):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    import normkit

    device, f64 = mesh.device_type, {"device": mesh.device_type, "dtype": torch.float64}
    x, residual = _randn(3, 4, N, seed=0, device=device), _randn(3, 4, N, seed=1, device=device)
    x_d, residual_d = (distribute_tensor(t, mesh, [Shard(1)]) for t in (x, residual))
    norm, fused = normkit.RMSNorm(N, **f64), normkit.FusedAddRMSNorm(N, **f64)
    for placement in (Shard(2), Shard(-1)):  # the normalised dimension
        with pytest.raises(ValueError, match=r"x of shape \(3, 4, 16\) is sharded along dimension -?2 .*reduces "
                                             r"over; shard a leading dimension"):
            norm(distribute_tensor(x, mesh, [placement]))
    with pytest.raises(ValueError, match=r"x of shape \(3, 4, 2, 8\) is sharded along dimension 2 "):
        normkit.LayerNorm((2, 8), **f64)(distribute_tensor(x.view(3, 4, 2, 8), mesh, [Shard(2)]))  # before a reshape
    with pytest.raises(ValueError, match=r"x must not be Partial \(mesh dim 0\)"):
        norm(DTensor.from_local(x, mesh, [Partial()]))
    with pytest.raises(TypeError, match=r"residual must be a DTensor placed like x \(Shard\(dim=1\),\) "
                                        r"\(x is a DTensor\), got Tensor"):
        fused(x_d, residual)
    with pytest.raises(TypeError, match=r"residual must be a plain torch.Tensor like x, got a DTensor "
                                        r"\(placements \(Shard\(dim=1\),\)\)"):
        fused(x, residual_d)
    with pytest.raises(ValueError, match=r"residual must be placed like x \(Shard\(dim=1\),\), "
                                         r"got \(Shard\(dim=0\),\)"):
        fused(x_d, distribute_tensor(residual, mesh, [Shard(0)]))
    with pytest.raises(ValueError, match=r"residual must have x's shape \(3, 4, 16\), got \(3, 2, 16\)"):
        fused(x_d, distribute_tensor(residual[:, :2], mesh, [Shard(1)]))
    other = init_device_mesh(device, (mesh.size(),), mesh_dim_names=("other",))
    with pytest.raises(ValueError, match=r"residual must be on x's device mesh DeviceMesh.*, got DeviceMesh.*other"):
        fused(x_d, distribute_tensor(residual, other, [Shard(1)]))
    weight = torch.ones(N, **f64)
    with pytest.raises(ValueError, match=r"weight must be on x's device mesh DeviceMesh.*, got DeviceMesh.*other"):
        normkit.rms_norm(x_d, distribute_tensor(weight, other, [Replicate()]))
    with pytest.raises(ValueError, match=r"weight must be Replicate on every mesh dimension \(or a plain tensor\), "
                                         r"got \(Shard\(dim=0\),\)"):
        normkit.rms_norm(x_d, distribute_tensor(weight, mesh, [Shard(0)]))
    with pytest.raises(TypeError, match=r"x must be a plain torch.Tensor for the low-level"):
        normkit.rms_norm_fwd(x_d, weight)


SCENARIOS = {"modules": scenario_modules, "hf_llama": scenario_hf_llama, "errors": scenario_errors}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_matches_single_process(outcomes, name):
    for rank, results in enumerate(outcomes):
        assert results.get(name) == "ok", f"rank {rank}, {name}:\n{results.get(name)}"
