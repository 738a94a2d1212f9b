"""normkit under torch.distributed: 2 processes, on CPU with gloo (kernels through Triton's
interpreter) and, where two GPUs exist, on CUDA with NCCL (one GPU a rank, compiled kernels).

One spawn per backend runs every scenario (starting processes and importing triton dominates the
runtime); each test then checks that scenario's outcome on both ranks against a single-process run
(the `outcomes` fixture serves tests/test_distributed_modules.py's scenarios the same way):
  ddp      DistributedDataParallel, a tiny patched LLaMA-style model, 3 SGD steps, run twice:
           the two runs must agree bitwise (deterministic per rank)
  fsdp2    torch.distributed.fsdp.fully_shard, the same model and steps
  dtensor  normkit.distributed.rms_norm / layer_norm on Shard(0) / Shard(1) DTensors of (B, S, N)
  rejects  a DTensor sharded along the normalised dimension (or Partial) raises ValueError
"""

import datetime
import functools
import json
import os
import sys
import traceback

import pytest
import torch

# The NVLink-multicast switches stay off wherever this launcher runs (they are no-ops on CPU):
# multicast can put a shared host's GPUs out of service. GLOO_SOCKET_IFNAME=lo: the ranks talk over
# loopback (a sandboxed machine's hostname may not resolve to a usable interface; on the H200 the
# fixture failed before any scenario ran). Under gloo the kernels run in Triton's interpreter on CPU
# tensors; under NCCL they are compiled (TRITON_INTERPRET is removed from the children's environment).
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
LAUNCH_ENV = {
    "gloo": {"TRITON_INTERPRET": "1", "GLOO_SOCKET_IFNAME": "lo", **NO_MULTICAST},
    "nccl": {"TRITON_INTERPRET": None, **NO_MULTICAST},
}
WORLD_SIZE = 2
STEPS = 3
ATOL = 1e-6  # fp32 rounding: the ranks sum the gradients in another order than one process does

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
_NUMPY = tuple(int(part) for part in __import__("numpy").__version__.split(".")[:2])
BACKENDS = [  # gloo runs the kernels in Triton 3.6's interpreter, which numpy >= 2.4 breaks
    pytest.param("gloo", marks=pytest.mark.skipif(not torch.distributed.is_available()
                                                  or not torch.distributed.is_gloo_available()
                                                  or _NUMPY >= (2, 4),
                                                  reason="the gloo backend (or numpy < 2.4 for the interpreter) is missing")),
    pytest.param("nccl", marks=pytest.mark.skipif(not torch.distributed.is_available()
                                                  or not torch.distributed.is_nccl_available()
                                                  or torch.cuda.device_count() < WORLD_SIZE,
                                                  reason=f"NCCL needs {WORLD_SIZE} CUDA devices")),
]


# ----------------------------------------------------------------------------- training scenarios
def _model_and_data(device):
    from normkit.demo import DemoConfig, TinyLlama, batches

    import normkit

    config = DemoConfig(hidden=32, layers=1, heads=2, vocab=64, seq=16, batch=2 * WORLD_SIZE, steps=STEPS)
    torch.manual_seed(0)
    model = TinyLlama(config.vocab, config.hidden, config.layers, config.heads)
    assert normkit.patch(model) == 3
    return model.to(device), [tokens.to(device) for tokens in batches(config)]


def _train(model, data, shard=None):
    from normkit.demo import loss_fn

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for tokens in data:
        loss = loss_fn(model, tokens if shard is None else tokens.chunk(WORLD_SIZE)[shard])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


@functools.lru_cache(maxsize=None)
def _reference_parameters(device):
    model, data = _model_and_data(device)
    _train(model, data)
    return {name: p.detach() for name, p in model.named_parameters()}


def _compare(parameters, reference):
    assert parameters.keys() == reference.keys()
    for name, p in parameters.items():
        torch.testing.assert_close(p, reference[name], atol=ATOL, rtol=0, msg=lambda m: f"{name}: {m}")


def scenario_ddp(rank, mesh):
    from torch.nn.parallel import DistributedDataParallel

    device = mesh.device_type
    reference = _reference_parameters(device)
    runs = []
    for _ in range(2):
        model, data = _model_and_data(device)
        ddp = DistributedDataParallel(model, device_ids=[rank] if device == "cuda" else None)
        _train(ddp, data, shard=rank)
        runs.append({name: p.detach() for name, p in model.named_parameters()})
    _compare(runs[0], reference)
    for name, p in runs[0].items():  # deterministic per rank: the same run twice, the same bits
        assert torch.equal(p, runs[1][name]), f"{name} differs between two identical DDP runs"


def scenario_fsdp2(rank, mesh):
    from torch.distributed.fsdp import fully_shard

    model, data = _model_and_data(mesh.device_type)
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    _train(model, data, shard=rank)
    _compare({name: p.full_tensor().detach() for name, p in model.named_parameters()},
             _reference_parameters(mesh.device_type))


# ----------------------------------------------------------------------------- DTensor scenarios
def _dtensor_case(mesh, norm, placement, with_bias, with_residual):
    from torch.distributed.tensor import Replicate, distribute_tensor
    from torch.distributed.tensor.debug import CommDebugMode

    import normkit
    import normkit.distributed as nd

    g = torch.Generator().manual_seed(1)
    x, residual, dy = (torch.randn(2, 6, 32, generator=g) for _ in range(3))  # (B, S, N), S uneven over 4
    weight, bias = 1 + 0.1 * torch.randn(32, generator=g), 0.1 * torch.randn(32, generator=g)
    x, residual, dy, weight, bias = (t.to(mesh.device_type) for t in (x, residual, dy, weight, bias))
    params = (weight, bias) if with_bias else (weight,)
    prenorm = {"residual": residual, "prenorm": True} if with_residual else {}

    leaves = [t.clone().requires_grad_() for t in (x, *params)]
    ref = getattr(normkit, norm)(leaves[0], *leaves[1:], **prenorm)
    ref_y = ref[0] if with_residual else ref
    ref_y.backward(dy)

    def shard(t):
        return distribute_tensor(t, mesh, [placement])

    x_d = shard(x).requires_grad_()
    params_d = [distribute_tensor(p, mesh, [Replicate()]).requires_grad_() for p in params]
    prenorm_d = {"residual": shard(residual), "prenorm": True} if with_residual else {}
    with CommDebugMode() as forward_comms:
        out = getattr(nd, norm)(x_d, *params_d, **prenorm_d)
    y = out[0] if with_residual else out
    assert forward_comms.get_total_counts() == 0, forward_comms.get_comm_counts()  # no gather
    assert tuple(y.placements) == (placement,) and y.to_local().shape == x_d.to_local().shape
    dy_d = shard(dy)
    with CommDebugMode() as backward_comms:
        y.backward(dy_d)
    assert backward_comms.get_total_counts() == len(params), backward_comms.get_comm_counts()  # one all-reduce each

    torch.testing.assert_close(y.full_tensor(), ref_y, atol=1e-5, rtol=1e-5)
    if with_residual:
        torch.testing.assert_close(out[1].full_tensor(), ref[1], atol=1e-6, rtol=0)
    torch.testing.assert_close(x_d.grad.full_tensor(), leaves[0].grad, atol=1e-5, rtol=1e-5)
    for p_d, p in zip(params_d, leaves[1:]):
        assert all(isinstance(q, Replicate) for q in p_d.grad.placements), p_d.grad.placements
        torch.testing.assert_close(p_d.grad.to_local(), p.grad, atol=1e-5, rtol=1e-5)


def scenario_dtensor(rank, mesh):
    from torch.distributed.tensor import Shard

    for placement in (Shard(0), Shard(1)):
        _dtensor_case(mesh, "rms_norm", placement, with_bias=False, with_residual=False)
        _dtensor_case(mesh, "rms_norm", placement, with_bias=False, with_residual=True)
        _dtensor_case(mesh, "layer_norm", placement, with_bias=True, with_residual=False)


def scenario_rejects(rank, mesh):
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    import normkit.distributed as nd

    x = torch.randn(2, 4, 32, device=mesh.device_type)
    weight = distribute_tensor(torch.ones(32, device=mesh.device_type), mesh, [Replicate()])
    for placement in (Shard(2), Shard(-1)):
        with pytest.raises(ValueError, match="reduces over"):
            nd.rms_norm(distribute_tensor(x, mesh, [placement]), weight)
    with pytest.raises(ValueError, match="Partial"):
        nd.rms_norm(DTensor.from_local(x, mesh, [Partial()]), weight)
    with pytest.raises(ValueError, match="Replicate on every mesh dimension"):
        nd.layer_norm(distribute_tensor(x, mesh, [Shard(0)]), distribute_tensor(torch.ones(32, device=mesh.device_type), mesh, [Shard(0)]))
    with pytest.raises(TypeError, match="x must be a DTensor"):  # normkit.rms_norm is the entry for plain x
        nd.rms_norm(x, weight.to_local())


SCENARIOS = {"ddp": scenario_ddp, "fsdp2": scenario_fsdp2, "dtensor": scenario_dtensor, "rejects": scenario_rejects}


# ----------------------------------------------------------------------------- launcher
def _set_env(env):
    """Apply `env` (None removes a variable); return what it replaced, in the same form."""
    saved = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    return saved


def _worker(rank, backend, store_path, result_dir, scenarios_module):
    _set_env(LAUNCH_ENV[backend])  # before triton / normkit are imported in this process
    import importlib

    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    device = "cuda" if backend == "nccl" else "cpu"
    if device == "cuda":
        torch.cuda.set_device(rank)
    store = dist.FileStore(store_path, WORLD_SIZE)
    dist.init_process_group(backend, store=store, rank=rank, world_size=WORLD_SIZE,
                            timeout=datetime.timedelta(seconds=120))
    results = {}
    try:
        mesh = init_device_mesh(device, (WORLD_SIZE,))
        for name, scenario in importlib.import_module(scenarios_module).SCENARIOS.items():
            try:
                scenario(rank, mesh)
                results[name] = "ok"
            except Exception:
                results[name] = traceback.format_exc()
            dist.barrier()
    finally:
        with open(os.path.join(result_dir, f"rank{rank}.json"), "w") as f:
            json.dump(results, f)
        dist.destroy_process_group()
    # The outcomes are on disk: leave without the interpreter's teardown, where a C++ thread still joinable
    # (gloo's, a compile worker's) once aborted a rank with "terminate called without an active exception".
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_scenarios(backend, directory, scenarios_module):
    """Every scenario of `scenarios_module`'s SCENARIOS ({name: fn(rank, mesh)}) in one spawn of
    WORLD_SIZE processes; returns each rank's {name: "ok" or the traceback}."""
    import torch.multiprocessing as mp

    saved = _set_env(LAUNCH_ENV[backend])  # spawned children inherit it
    try:
        mp.spawn(_worker, args=(backend, str(directory / "store"), str(directory), scenarios_module),
                 nprocs=WORLD_SIZE, join=True)
    finally:
        _set_env(saved)
    return [json.loads((directory / f"rank{r}.json").read_text()) for r in range(WORLD_SIZE)]


@pytest.fixture(scope="module", params=BACKENDS)
def outcomes(request, tmp_path_factory):
    """Each rank's outcomes of the requesting test module's SCENARIOS, on one backend."""
    module = request.module.__name__
    return run_scenarios(request.param, tmp_path_factory.mktemp(f"{module}_{request.param}"), module)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_matches_single_process(outcomes, name):
    for rank, results in enumerate(outcomes):
        assert results.get(name) == "ok", f"rank {rank}, {name}:\n{results.get(name)}"
