"""Under torch.compile the norms trace as their Triton kernels (`normkit.compiled`), not as opaque ops.

CPU: Dynamo + AOTAutograd (backend "aot_eager") with the interpreter running the kernels the graph
launches; the graphs hold `triton_kernel_wrapper_functional` nodes and the results are an eager call's
bits. GPU: Inductor's generated code launches the kernels (test_inductor_launches_the_kernels).
"""

import os

import pytest
import torch
from torch._dynamo.testing import AotEagerAndRecordGraphs

import normkit
from normkit import compiled, ops

from utils import make_inputs

Tensor = torch.Tensor


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    mode = ops.get_compile_ops()
    ops.set_compile_ops("triton")
    yield
    torch._dynamo.reset()
    ops.set_compile_ops(mode)


CASES = {  # name: (norm, residual, bias, gate)
    "rms": (normkit.rms_norm, False, False, False),
    "rms-residual": (normkit.rms_norm, True, False, False),
    "layer-bias-residual": (normkit.layer_norm, True, True, False),
    "layer-no-bias": (normkit.layer_norm, False, False, False),
    "rms-gate": (normkit.rms_norm, False, False, True),
}


def _inputs(case: str, dtype: torch.dtype, device: str, m: int = 6, n: int = 96) -> dict:
    norm, residual, bias, gate = CASES[case]
    x, w, dy = make_inputs(m, n, dtype, device)
    generator = torch.Generator().manual_seed(1)
    extra = lambda: torch.randn(m, n, generator=generator).to(device=device, dtype=dtype)  # noqa: E731
    return dict(x=x, weight=w, dy=dy, residual=extra() if residual else None,
                bias=torch.randn(n, generator=generator).to(device=device, dtype=dtype) if bias else None,
                gate=extra() if gate else None)


def _norm(case: str):
    """The case's norm of x, weight, bias, residual, gate."""
    norm = CASES[case][0]

    def forward(x, weight, bias, residual, gate):
        return norm(x, weight, bias=bias, residual=residual, **({} if gate is None else {"gate": gate}))

    return forward


def _run(forward, leaves: list) -> list:
    """y = forward(*tensors), then the gradients of Σ y·dy for each tensor given: [y, *gradients]."""
    *tensors, dy = leaves
    y = forward(*tensors)
    (y.float() * dy.float()).sum().backward()
    return [y.detach()] + [t.grad for t in tensors if t is not None]


def _leaves(inputs: dict, dtype=None) -> list:
    """x, weight, bias, residual, gate (None where absent) as fresh leaves, dy as given (cast to dtype)."""
    cast = (lambda t: t) if dtype is None else (lambda t: t.to(dtype))  # noqa: E731
    return [None if inputs[k] is None else cast(inputs[k]).detach().clone().requires_grad_()
            for k in ("x", "weight", "bias", "residual", "gate")] + [cast(inputs["dy"])]


def _ops(graph) -> set:
    return {str(node.target) for node in graph.graph.nodes if node.op == "call_function"}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compiled_graphs_launch_the_kernels(case, dtype, device):
    """Forward and backward graphs hold the kernels' wrapper nodes, not the opaque ops; the results are
    the eager call's bits, and near a float64 computation."""
    inputs = _inputs(case, dtype, device)
    forward = _norm(case)
    backend = AotEagerAndRecordGraphs()
    got = _run(torch.compile(forward, backend=backend, fullgraph=True), _leaves(inputs))
    expected = _run(forward, _leaves(inputs))
    for g, e in zip(got, expected):
        assert torch.equal(g, e)
    for graph in (*backend.fw_graphs, *backend.bw_graphs):
        ops = _ops(graph)
        assert "triton_kernel_wrapper_functional" in ops, ops
        assert not any(op.startswith("normkit.") for op in ops), ops
    assert backend.fw_graphs and backend.bw_graphs
    reference = _run(forward, _leaves(inputs, torch.float64))
    tol = dict(rtol=2e-2, atol=4e-2) if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-4)
    for g, r in zip(got, reference):
        torch.testing.assert_close(g.double(), r, **tol)


FEATURES = {  # name: (norm's keyword arguments, x's shape, weight's shape)
    "per-head": (dict(eps=1e-6), (6, 4, 32), (4, 32)),
    "gemma-offset-llama-casting": (dict(weight_offset=1.0, casting_mode="llama"), (6, 96), (96,)),
    "fp32-out": (dict(out_dtype=torch.float32), (6, 96), (96,)),
    "3-d": (dict(eps=1e-5), (2, 3, 96), (96,)),
}


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_features_trace_as_the_kernels_with_eager_bits(feature, device):
    """Per-head weights, Gemma's offset with Llama's casting, another output dtype and N-D x: the graphs
    launch the kernels, and y, dx and dweight are an eager call's bits (bf16 x)."""
    kwargs, x_shape, w_shape = FEATURES[feature]
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(x_shape, generator=generator).to(device=device, dtype=torch.bfloat16)
    w = torch.randn(w_shape, generator=generator).to(device=device, dtype=torch.bfloat16)
    out_dtype = kwargs.get("out_dtype", torch.bfloat16)
    dy = torch.randn(x_shape, generator=generator).to(device=device, dtype=out_dtype)

    def forward(x, weight):
        return normkit.rms_norm(x, weight, **kwargs)

    backend = AotEagerAndRecordGraphs()
    leaves = lambda: [x.clone().requires_grad_(), w.clone().requires_grad_(), dy]  # noqa: E731
    got = _run(torch.compile(forward, backend=backend, fullgraph=True), leaves())
    expected = _run(forward, leaves())
    assert got[0].dtype == out_dtype and got[0].shape == x_shape
    for g, e in zip(got, expected):
        assert torch.equal(g, e)
    for graph in (*backend.fw_graphs, *backend.bw_graphs):
        assert "triton_kernel_wrapper_functional" in _ops(graph) and not any(
            op.startswith("normkit.") for op in _ops(graph)), _ops(graph)


def test_backward_finishes_dweight_and_dbias_apart(device):
    """LayerNorm with a bias: the backward graph launches the backward and one finisher per gradient."""
    inputs = _inputs("layer-bias-residual", torch.float32, device)
    backend = AotEagerAndRecordGraphs()
    _run(torch.compile(_norm("layer-bias-residual"), backend=backend, fullgraph=True), _leaves(inputs))
    wrappers = [node for graph in backend.bw_graphs for node in graph.graph.nodes
                if node.op == "call_function" and "triton_kernel_wrapper_functional" in str(node.target)]
    assert len(wrappers) == 3, wrappers


def test_opaque_mode_traces_the_custom_ops(device):
    ops.set_compile_ops("opaque")
    inputs = _inputs("rms-residual", torch.float32, device)
    backend = AotEagerAndRecordGraphs()
    forward = _norm("rms-residual")
    got = _run(torch.compile(forward, backend=backend, fullgraph=True), _leaves(inputs))
    assert "normkit.norm_fwd.default" in _ops(backend.fw_graphs[0])
    assert "normkit.norm_bwd.default" in _ops(backend.bw_graphs[0])
    for g, e in zip(got, _run(forward, _leaves(inputs))):
        assert torch.equal(g, e)


@pytest.mark.parametrize("mode", ["opaque", "triton"])
def test_a_dropped_residual_out_gets_no_zero_gradient(mode, device):
    """rms_norm(x, w, residual=r) drops residual_out: AOTAutograd materialised a zero M × N gradient for it
    (an allocation, a fill, a read) and the backward ran the dresidual tile, not eager's: other bits in
    dweight on an H100. The backward graph now holds no zeros and no dresidual; prenorm's dresidual is read."""
    ops.set_compile_ops(mode)
    inputs = _inputs("rms-residual", torch.float32, device)
    for prenorm in (False, True):
        torch._dynamo.reset()
        backend = AotEagerAndRecordGraphs()

        def forward(x, weight, bias, residual, gate):
            out = normkit.rms_norm(x, weight, residual=residual, prenorm=prenorm)
            return out[0] + out[1] if prenorm else out

        got = _run(torch.compile(forward, backend=backend, fullgraph=True), _leaves(inputs))
        for g, e in zip(got, _run(forward, _leaves(inputs))):
            assert torch.equal(g, e)
        code = backend.bw_graphs[0].code
        assert ("aten.zeros" in code) is False
        if mode == "triton":
            assert ("'HAS_DRESIDUAL': True" in code) is prenorm, code
        else:
            call = next(n for n in backend.bw_graphs[0].graph.nodes if str(n.target) == "normkit.norm_bwd.default")
            assert (call.args[5] is not None) is prenorm, call.args


def test_a_symbolic_grid_sizes_the_finisher_from_its_bound(monkeypatch, device):
    """Rows dynamic with fewer row blocks than the device's slots (a GPU of 132 SMs): the backward's grid is
    symbolic, and the finisher's tile was looked up in a cache keyed by it (TypeError: unhashable SymInt, every
    dynamic-rows compile on an H100). The tile is now chosen for the grid's bound; the results are eager's."""
    from normkit import arguments

    monkeypatch.setattr(compiled, "multiprocessor_count", lambda device: 132)
    monkeypatch.setattr(arguments, "interpret", lambda: False)  # the GPU's tiles, run in the interpreter
    forward = _norm("layer-bias-residual")
    backend = AotEagerAndRecordGraphs()
    compiled_forward = torch.compile(forward, backend=backend, fullgraph=True)
    for m in (300, 700):
        inputs = _inputs("layer-bias-residual", torch.float32, device, m=m, n=64)
        got = _run(compiled_forward, _dynamic_rows(_leaves(inputs)))
        for g, e, name in zip(got, _run(forward, _leaves(inputs)), ("y", "dx", "dweight", "dbias", "dresidual")):
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5, msg=name)
    assert _launches_the_kernels(backend)


def _launches_the_kernels(backend) -> bool:
    return bool(backend.fw_graphs and backend.bw_graphs) and all(
        "triton_kernel_wrapper_functional" in _ops(graph) and not any(op.startswith("normkit.") for op in _ops(graph))
        for graph in (*backend.fw_graphs, *backend.bw_graphs))


def _assert_as_eager(got: list, expected: list, device: str, note=None) -> None:
    """y and the gradients of row tensors (x, residual, gate) are eager's bits. Parameter gradients too in the
    interpreter (its grid is every slot: never symbolic); on a GPU with more slots than row blocks a symbolic M
    makes the backward's grid symbolic, the finisher's tile is then sized for the grid's bound, and the same
    partial rows are summed in other groups."""
    for g, e in zip(got, expected):
        if g.shape == got[0].shape or device == "cpu":
            assert torch.equal(g, e), note
        else:
            tol = 1e-4 if g.dtype == torch.float32 else 1e-2  # (sums of ~1000 rows grouped otherwise)
            torch.testing.assert_close(g, e, rtol=tol, atol=tol, msg=lambda m: f"{note}: {m}")


def _dynamic_rows(leaves: list) -> list:
    """The leaves with their rows marked dynamic (x, residual, gate: the row tensors a caller passes)."""
    for t in (leaves[0], leaves[3], leaves[4]):
        if t is not None:
            torch._dynamo.mark_dynamic(t, 0)
    return leaves


@pytest.mark.parametrize("case", ["rms", "rms-residual", "layer-bias-residual"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dynamic_rows_trace_as_the_kernels(case, dtype, device):
    """A symbolic M traces as the kernels with eager's results (`_assert_as_eager`). The interpreter's tiles are
    64 × 1024 on 4 slots, so there the guards are M ≥ 64 and cdiv(M, 64) > 4 (the backward's grid is every slot):
    one graph serves 512, 1000 and 4096 rows; 5 rows guard on 4 < M ≤ 8 (BLOCK_M 8, one row block) and take a
    second graph. (A GPU's tiles and slots guard elsewhere.)"""
    forward = _norm(case)
    backend = AotEagerAndRecordGraphs()  # (its .graphs: one a compile)
    compiled = torch.compile(forward, backend=backend, fullgraph=True)
    graphs = []
    for m in (512, 1000, 4096, 5):
        inputs = _inputs(case, dtype, device, m=m, n=1024)
        _assert_as_eager(_run(compiled, _dynamic_rows(_leaves(inputs))), _run(forward, _leaves(inputs)), device, m)
        graphs.append(len(backend.graphs))
    assert graphs == [1, 1, 1, 2] or device != "cpu", graphs
    assert _launches_the_kernels(backend)


def test_rows_dynamic_after_a_second_row_count_trace_as_the_kernels(device):
    """Dynamo's automatic dynamic shapes (a second row count recompiles with M symbolic: batches padded to their
    longest sequence) keep the kernels: one graph for the first M, one for every M after."""
    forward = _norm("rms-residual")
    backend = AotEagerAndRecordGraphs()
    compiled = torch.compile(forward, backend=backend, fullgraph=True)
    for m in (600, 700, 900):
        inputs = _inputs("rms-residual", torch.bfloat16, device, m=m, n=1024)
        _assert_as_eager(_run(compiled, _leaves(inputs)), _run(forward, _leaves(inputs)), device, m)
    assert len(backend.graphs) == 2 and _launches_the_kernels(backend)


def test_module_under_dynamic_true_traces_as_the_kernels(device):
    """dynamic=True with the weight a module's parameter (Dynamo keeps parameters' shapes static): N is an int."""
    module = normkit.RMSNorm(1024).to(device)
    backend = AotEagerAndRecordGraphs()
    compiled = torch.compile(module, backend=backend, fullgraph=True, dynamic=True)
    for m in (300, 500):
        x, _, dy = make_inputs(m, 1024, torch.float32, device)
        results = []
        for run in (compiled, module):
            module.weight.grad = None
            results.append((*_run(run, [x.clone().requires_grad_(), dy]), module.weight.grad))
        _assert_as_eager(*results, device, m)
    assert _launches_the_kernels(backend)


def _assert_takes_the_opaque_ops(forward, leaves, **options) -> None:
    """The compiled forward's graphs call the opaque ops, and its y and gradients are eager's bits; leaves():
    fresh inputs (tensors to differentiate, then dy)."""
    backend = AotEagerAndRecordGraphs()
    got = _run(torch.compile(forward, backend=backend, fullgraph=True, **options), leaves())
    expected = _run(forward, leaves())
    assert len(got) == len(expected) and all(torch.equal(g, e) for g, e in zip(got, expected))
    assert any("normkit.norm_fwd.default" in _ops(graph) for graph in backend.fw_graphs)
    assert any("normkit.norm_bwd.default" in _ops(graph) for graph in backend.bw_graphs)


def test_symbolic_n_takes_the_opaque_ops(device):
    """dynamic=True on a function whose weight is an input: N is symbolic, and would pick the tile and the
    constexprs from a guess. The triton op calls the opaque one, same bits."""
    x, w, dy = make_inputs(5, 96, torch.float32, device)
    forward = _norm("rms")
    _assert_takes_the_opaque_ops(lambda x, weight: forward(x, weight, None, None, None),
                                 lambda: [x.clone().requires_grad_(), w.clone().requires_grad_(), dy], dynamic=True)


def test_symbolic_row_stride_takes_the_opaque_ops(device):
    """x a column slice of a tensor whose width is dynamic: its row stride is symbolic (the opaque op, same bits)."""
    wide, w, dy = make_inputs(5, 104, torch.float32, device)

    def leaves() -> list:
        leaf = wide.clone().requires_grad_()
        torch._dynamo.mark_dynamic(leaf, 1)
        return [leaf, w[:96].clone().requires_grad_(), dy[:, :96]]

    _assert_takes_the_opaque_ops(lambda wide, weight: normkit.rms_norm(wide[:, :96], weight), leaves)


def test_prenorm_residual_out_keeps_the_callers_shape(device):
    """A prenorm residual_out comes back in x's shape: it needs torch's analysis to see that only the outputs are
    written (`compiled._every_argument` passes it every parameter; a kernel default left out made it fail)."""
    x, w, _ = make_inputs(6, 64, torch.float32, device)
    x, residual = x.view(2, 3, 64), torch.randn(2, 3, 64, device=device)

    def forward(x, weight, residual):
        return normkit.rms_norm(x, weight, residual=residual, prenorm=True)

    y, h = torch.compile(forward, backend="aot_eager", fullgraph=True)(x, w.clone().requires_grad_(), residual)
    assert y.shape == h.shape == (2, 3, 64), (y.shape, h.shape)


def test_a_function_compiled_in_one_mode_recompiles_in_the_other(device):
    """Dynamo guards on the mode (bench --model's traced variants rely on it): flipping it recompiles, and
    flipping it back finds the first graph again."""
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("aot_eager")
    inputs = _inputs("rms", torch.float32, device)
    compiled = torch.compile(_norm("rms"), backend=counter, fullgraph=True)
    expected, graphs = _run(_norm("rms"), _leaves(inputs)), []
    for mode in ("opaque", "triton", "opaque", "triton"):
        ops.set_compile_ops(mode)
        got = _run(compiled, _leaves(inputs))
        graphs.append(counter.frame_count)
        assert all(torch.equal(g, e) for g, e in zip(got, expected)), mode
    assert graphs == [1, 2, 2, 2]


def test_set_mode_rejects_unknown_modes():
    with pytest.raises(ValueError, match="mode must be 'triton' or 'opaque', got 'inductor'"):
        ops.set_compile_ops("inductor")
    with pytest.raises(TypeError, match="mode must be a str, 'triton' or 'opaque', got bool True"):
        ops.set_compile_ops(True)
    assert ops.get_compile_ops() == "triton"  # (the fixture's mode) unchanged by the refused calls


@pytest.mark.parametrize("value, error", [("inductor", "got 'inductor'"), ("", None), (" Triton ", None)])
def test_the_environment_variable_is_checked_at_import(value, error):
    """NORMKIT_COMPILE_OPS: a bad value fails `import normkit` naming the variable; case and spaces are forgiven."""
    import subprocess
    import sys

    code = "import normkit.ops as o; print(o.get_compile_ops())"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NORMKIT_COMPILE_OPS": value})
    if error is None:
        assert run.returncode == 0 and run.stdout.strip() == ("triton" if value.strip() else "opaque"), run.stderr
    else:
        assert run.returncode != 0 and "NORMKIT_COMPILE_OPS must be 'triton' or 'opaque'" in run.stderr
        assert error in run.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="Inductor launches user Triton kernels on a GPU only")
@pytest.mark.parametrize("case", sorted(CASES))
def test_inductor_launches_the_kernels(case, monkeypatch):
    """Inductor's generated code launches normkit's kernels itself; results as eager (the forward and dx
    bitwise; parameter gradients summed in the same order where the persistent grid is the same)."""
    from torch._higher_order_ops import triton_kernel_wrap
    from torch._inductor.utils import run_and_get_code

    found, analyse = [], triton_kernel_wrap.get_mutated_tensors  # (kernel, its tensors, what torch found written)

    def recorded(kernel_idx, constant_args_idx, kwargs, *rest):
        written = analyse(kernel_idx, constant_args_idx, kwargs, *rest)
        found.append((triton_kernel_wrap.kernel_side_table.get_kernel(kernel_idx), kwargs, written))
        return written

    monkeypatch.setattr(triton_kernel_wrap, "get_mutated_tensors", recorded)
    inputs = _inputs(case, torch.bfloat16, "cuda", m=4096, n=2048)
    forward = _norm(case)
    got, codes = run_and_get_code(_run, torch.compile(forward, backend="inductor", fullgraph=True),
                                  _leaves(inputs))
    expected = _run(forward, _leaves(inputs))
    code = "\n".join(codes)
    assert "norm_fwd_kernel" in code and "norm_bwd_kernel" in code and "sum_partials_kernel" in code
    assert "torch.ops.normkit" not in code
    assert found and all(sorted(w) == sorted(compiled.written(k, kw)) for k, kw, w in found), found  # WRITES
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    for g, e in zip(got[2:], expected[2:]):
        torch.testing.assert_close(g, e, rtol=1e-2, atol=1e-2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="Inductor launches user Triton kernels on a GPU only")
@pytest.mark.parametrize("case", ["rms", "rms-residual", "layer-bias-residual"])
def test_inductor_launches_the_kernels_for_dynamic_rows(case):
    """Inductor's code for a symbolic M launches normkit's kernels: one compile serves 4096, 5000 and 8192 rows
    (more row blocks than the backward's slots), y and dx are eager's bits."""
    from torch._dynamo.testing import CompileCounterWithBackend
    from torch._inductor.utils import run_and_get_code

    forward = _norm(case)
    counter = CompileCounterWithBackend("inductor")
    compiled, codes = torch.compile(forward, backend=counter, fullgraph=True), []
    for m in (4096, 5000, 8192):
        inputs = _inputs(case, torch.bfloat16, "cuda", m=m, n=2048)
        got, code = run_and_get_code(_run, compiled, _dynamic_rows(_leaves(inputs)))
        expected, codes = _run(forward, _leaves(inputs)), codes + code
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1]), m
        for g, e in zip(got[2:], expected[2:]):
            torch.testing.assert_close(g, e, rtol=1e-2, atol=1e-2)
    assert counter.frame_count == 1
    code = "\n".join(codes)
    assert "norm_fwd_kernel" in code and "norm_bwd_kernel" in code and "torch.ops.normkit" not in code


def test_kernel_sources_survive_inductors_string_literal():
    """Inductor pastes a traced kernel's source, with the helpers and globals it reads, into a \'\'\' string of
    the module it generates; torch 2.11's did not escape backslashes, so the inline PTX's "\\n" became a newline
    inside a string literal and the module failed to load (every Inductor compile with
    NORMKIT_COMPILE_OPS=triton on an H100). The sources hold no backslash, and each loads as that torch pastes
    it. (Compiled kernels, not the interpreter's: a subprocess without TRITON_INTERPRET; no GPU needed.)"""
    import subprocess
    import sys

    code = """if True:
        import ast
        from torch._inductor.codegen.wrapper import user_defined_triton_kernel_transitive_closure_source_code as closure
        from normkit.kernels import backward, forward, reduce
        for kernel in (forward.norm_fwd_kernel, backward.norm_bwd_kernel, reduce.sum_partials_kernel):
            source = closure(kernel)
            assert "await_word" in source or kernel is reduce.sum_partials_kernel
            assert "\\\\" not in source, [line for line in source.splitlines() if "\\\\" in line]
            pasted = ast.literal_eval("\'\'\'" + source + "\'\'\'")  # the string torch 2.11's module holds
            ast.parse("import triton\\nimport triton.language as tl\\n" + pasted)
            print(kernel.__name__, len(source.splitlines()))
    """
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(run.stdout.split()) == 6, run.stdout
