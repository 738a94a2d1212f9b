"""`normkit.patch`: which modules it replaces, what it keeps, and that it reproduces their numerics.

Hugging Face classes are tested twice: as copies of their code defined here (transformers is
optional; recognition is by name and code, never by import) and, when transformers is installed,
as the real classes and as tiny LlamaForCausalLM / Qwen3ForCausalLM / Gemma2ForCausalLM models.
"""

import copy
import inspect
import io
import logging
import warnings

import pytest
import torch
from torch import nn

import normkit
from normkit.demo import TinyLlama, loss_fn
from normkit.integrations import hf

# 16-bit outputs: on CUDA within one ulp of the original and ≥ 99 % bit-identical. Triton's CPU
# interpreter truncates fp32 → 16-bit instead of rounding to nearest, which compounds to up to
# three ulps over Llama's two roundings (as in test_functional), so there the bound is four.
ULPS = {"cuda": 1, "cpu": 4}


def assert_within_ulps(out, ref, dtype, device):
    """out vs ref: within ULPS[device] ulps of the 16-bit `dtype` everywhere (x's: a float32 output of
    Llama's recipe with a float32 weight holds x̂ rounded to it); on CUDA also ≥ 99 % bit-identical."""
    ulp = torch.finfo(dtype).eps * torch.exp2(torch.floor(torch.log2(ref.detach().float().abs().clamp_min(1e-30))))
    assert ((out.detach().float() - ref.detach().float()).abs() <= ULPS[device] * ulp).all()
    if device == "cuda":
        assert (out == ref).float().mean().item() >= 0.99


def ran_normkit(y) -> bool:
    """Whether y came out of normkit's autograd Function (not the original forward, a fallback)."""
    pending, seen = [y.grad_fn], set()
    while pending:
        node = pending.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if "NormFunction" in node.name():
            return True
        pending.extend(next_node for next_node, _ in node.next_functions)
    return False


def compare_module(original, x, dy, device):
    """Patched copy vs original: output (dtype and value) and gradients of x and the parameters."""
    original.zero_grad(set_to_none=True)
    patched = copy.deepcopy(original)
    assert normkit.patch(patched) == 1
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = patched(xa), original(xb)
    assert ya.dtype == yb.dtype and ya.shape == yb.shape and ran_normkit(ya) and not ran_normkit(yb)
    if x.dtype in (torch.bfloat16, torch.float16):
        assert_within_ulps(ya, yb, x.dtype, device)
        tol = dict(rtol=2e-2, atol=5e-2)
    else:
        torch.testing.assert_close(ya, yb, rtol=1e-5, atol=1e-5)
        tol = dict(rtol=1e-4, atol=1e-4)
    ya.backward(dy.to(ya.dtype))
    yb.backward(dy.to(yb.dtype))
    torch.testing.assert_close(xa.grad, xb.grad, **tol)
    for pa, pb in zip(patched.parameters(), original.parameters()):
        torch.testing.assert_close(pa.grad, pb.grad, **tol)
    return patched


# ----------------------------------------------------------------------------- Hugging Face code, copied
class LlamaRMSNorm(nn.Module):  # transformers' LlamaRMSNorm, as written there
    def __init__(self, hidden_size, eps: float = 1e-6) -> None:
        """
        LlamaRMSNorm is equivalent to T5LayerNorm
        """
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class GemmaRMSNorm(nn.Module):  # transformers' GemmaRMSNorm (Gemma2/Gemma3 are the same code)
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        # Llama does x.to(float16) * w whilst Gemma is (x * w).to(float16)
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class Olmo2RMSNorm(LlamaRMSNorm):  # Olmo2: the weight multiply in fp32, then one rounding
    def forward(self, hidden_states) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return (self.weight * hidden_states).to(input_dtype)


class ScaledRMSNorm(LlamaRMSNorm):  # a subclass with its own forward: not reproducible
    def forward(self, hidden_states):
        return 2 * super().forward(hidden_states)


class OffsetRMSNorm(GemmaRMSNorm):  # Gemma's code but (1 + w) rounded in the weight's dtype
    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight).float()
        return output.type_as(x)


class TorchSubclassRMSNorm(nn.RMSNorm):  # overrides forward
    def forward(self, x):
        return super().forward(x).clamp(-1, 1)


def _randomise(module, center=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(center + 0.3 * torch.randn(p.shape, generator=g, dtype=torch.float64))
    return module


def _inputs(shape, dtype, device, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    return x.to(dtype=dtype, device=device), (0.5 * x + torch.randn(shape, generator=g, dtype=torch.float64))


@pytest.mark.parametrize("cls,center", [(LlamaRMSNorm, 1.0), (GemmaRMSNorm, 0.1), (Olmo2RMSNorm, 1.0)])
@pytest.mark.parametrize("dtype,weight_dtype", [(torch.bfloat16, torch.bfloat16), (torch.bfloat16, torch.float32),
                                                (torch.float16, torch.float16), (torch.float32, torch.float32)])
def test_hugging_face_code_is_reproduced(cls, center, dtype, weight_dtype, device):
    """Output dtype and values (within the 16-bit bound above), gradients of x and weight."""
    module = _randomise(cls(256, eps=1e-5), center).to(device=device, dtype=weight_dtype)
    x, dy = _inputs((4, 16, 256), dtype, device)
    patched = compare_module(module, x, dy.to(device), device)
    assert isinstance(patched, cls) and "normkit=" in repr(patched)


def test_per_head_query_key_norm(device):
    """Qwen3's q_norm/k_norm: a (D,) weight applied to (..., H, D)."""
    module = _randomise(LlamaRMSNorm(16, eps=1e-6)).to(device=device, dtype=torch.bfloat16)
    x, dy = _inputs((2, 8, 4, 16), torch.bfloat16, device)
    compare_module(module, x, dy.to(device), device)


# ----------------------------------------------------------------------------- torch.nn norms
def _tree(device):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(48, 48), nn.RMSNorm(48, eps=1e-6), nn.GELU(), nn.Linear(48, 48),
        nn.ModuleDict({"ln": nn.LayerNorm(48), "plain": nn.RMSNorm(48, elementwise_affine=False),
                       "ln_no_bias": nn.LayerNorm(48, bias=False)}),
    ).to(device)
    for m in model.modules():
        if isinstance(m, (nn.RMSNorm, nn.LayerNorm)):
            _randomise(m, seed=3)

    def forward(x):
        y = model[3](model[2](model[1](model[0](x))))
        d = model[4]
        return d["ln_no_bias"](d["plain"](d["ln"](y)))

    return model, forward


def test_torch_norm_tree_keeps_parameters_state_dict_and_optimizer(device):
    model, forward = _tree(device)
    reference, reference_forward = _tree(device)
    params = list(model.parameters())
    keys = list(model.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)

    assert normkit.patch(model) == 4
    assert all(a is b for a, b in zip(model.parameters(), params)) and len(list(model.parameters())) == len(params)
    assert list(model.state_dict()) == keys
    assert isinstance(model[1], nn.RMSNorm) and isinstance(model[1], normkit.RMSNorm)
    assert isinstance(model[4]["ln"], nn.LayerNorm) and isinstance(model[4]["ln"], normkit.LayerNorm)
    assert not isinstance(model[0], normkit.RMSNorm)

    x = torch.randn(5, 48, device=device)
    for _ in range(2):  # two steps: the optimizer built before patching moves the same parameters
        for m, f, opt in ((model, forward, optimizer), (reference, reference_forward, reference_optimizer)):
            opt.zero_grad()
            f(x).square().mean().backward()
            opt.step()
        for (name, a), b in zip(model.named_parameters(), reference.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
    assert normkit.patch(model) == 0  # already patched


def test_model_without_norms_returns_zero_and_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert normkit.patch(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.BatchNorm1d(4))) == 0
        assert normkit.patch(normkit.FusedAddRMSNorm(8)) == 0  # normkit's own modules are left as they are


def test_subclasses_that_keep_forward_are_patched_too():
    class MyRMSNorm(nn.RMSNorm):
        def extra_repr(self):
            return "mine"

    class MyLayerNorm(nn.LayerNorm):
        pass

    model = nn.Sequential(MyRMSNorm(8), MyLayerNorm(8))
    assert normkit.patch(model) == 2
    assert isinstance(model[0], MyRMSNorm) and isinstance(model[0], normkit.RMSNorm)
    assert isinstance(model[1], MyLayerNorm) and isinstance(model[1], normkit.LayerNorm)
    assert repr(model[0]) == "MyRMSNorm(mine, normkit=fp32)"
    assert ran_normkit(model(torch.randn(2, 8, requires_grad=True)))


def test_code_matching_ignores_form_but_not_content():
    llama = inspect.getsource(LlamaRMSNorm.forward)  # the copy of transformers' code above
    reformatted = """
    def forward(me, x):
        "a docstring"
        dtype = x.dtype
        x = x.to(torch.float32)  # a comment
        v = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(v + me.variance_epsilon)
        return me.weight * x.to(dtype)
"""
    assert hf.canonical(llama) == hf.canonical(reformatted)
    # transformers renames epsilon between releases: either name matches, and the recipe reads that one
    renamed = llama.replace("variance_epsilon", "eps")
    assert hf.canonical(renamed) == hf.canonical(llama)
    assert (hf.eps_attribute(renamed), hf.eps_attribute(llama)) == ("eps", "variance_epsilon")
    assert hf.eps_attribute(renamed + llama) is None  # both names: ambiguous, not recognised
    for changed in (llama.replace("variance_epsilon", "epsilon"), llama.replace("mean(-1", "mean(-2"),
                    llama.replace("self.weight * hidden_states.to(input_dtype)",
                                  "(self.weight * hidden_states).to(input_dtype)")):
        assert hf.canonical(changed) != hf.canonical(llama)


def test_flags_select_the_kinds():
    model = nn.Sequential(nn.RMSNorm(8), nn.LayerNorm(8), LlamaRMSNorm(8))
    assert normkit.patch(model, rms_norm=False) == 1 and type(model[0]) is nn.RMSNorm
    assert normkit.patch(model, layer_norm=False) == 2


def test_unrecognised_norms_are_left_alone_with_a_warning_naming_them():
    model = nn.Sequential(LlamaRMSNorm(8), ScaledRMSNorm(8), OffsetRMSNorm(8), TorchSubclassRMSNorm(8),
                          nn.RMSNorm(8), nn.RMSNorm(8))
    model[5].forward = lambda x: x  # a forward set on the instance
    before = [type(m) for m in model]
    with pytest.warns(UserWarning, match="left 4 module") as record:
        assert normkit.patch(model) == 2
    message = str(record[0].message)
    for name in ("ScaledRMSNorm at '1'", "OffsetRMSNorm at '2'", "TorchSubclassRMSNorm at '3'", "RMSNorm at '5'"):
        assert name in message, message
    assert [type(m) for m in model][1:4] == before[1:4] and type(model[5]) is nn.RMSNorm


@pytest.mark.parametrize("flag", ["rms_norm", "layer_norm", "fuse_residual"])
def test_patch_flags_take_bools_only(flag):
    model = nn.Sequential(nn.RMSNorm(8))
    with pytest.raises(TypeError, match=f"{flag} must be a bool \\(True or False\\), got str 'no'"):
        normkit.patch(model, **{flag: "no"})
    assert type(model[0]) is nn.RMSNorm  # nothing switched before the error


def test_patch_reports_and_logs_what_it_switched(caplog):
    """patch() returns an int equal to the count that also lists the modules per class, and logs one
    INFO line per class switched and a WARNING for what it left alone on the "normkit" logger."""
    model = nn.Sequential(nn.RMSNorm(8), nn.RMSNorm(8), nn.LayerNorm(8), ScaledRMSNorm(8))
    with caplog.at_level(logging.INFO, logger="normkit"), pytest.warns(UserWarning, match="left 1 module"):
        report = normkit.patch(model)
    assert report == 3 and isinstance(report, int) and int(report) == 3
    assert report.switched == {"RMSNorm": ["0", "1"], "LayerNorm": ["2"]}
    assert report.left_alone == {("ScaledRMSNorm", "forward not recognised"): ["3"]}
    assert repr(report) == "PatchReport(3 switched (RMSNorm: 2, LayerNorm: 1), 1 left alone)"
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "normkit"]
    assert ("INFO", "normkit.patch: 2 RMSNorm module(s) now run on normkit: '0', '1'") in records
    assert ("INFO", "normkit.patch: 1 LayerNorm module(s) now run on normkit: '2'") in records
    assert any(level == "WARNING" and "ScaledRMSNorm at '3'" in text for level, text in records)
    again = normkit.patch(model[:3])
    assert again == 0 and again.switched == {} and repr(again) == "PatchReport(0 switched, 0 left alone)"


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_inputs_normkit_does_not_take_run_the_original_forward(device):
    """float64 weight with float32 input: torch.nn.RMSNorm accepts it, normkit falls back."""
    module = _randomise(nn.RMSNorm(32)).to(device=device, dtype=torch.float64)
    reference = copy.deepcopy(module)
    normkit.patch(module)
    x = torch.randn(3, 32, device=device, requires_grad=True)
    y = module(x)
    torch.testing.assert_close(y, reference(x))
    assert not ran_normkit(y)
    assert ran_normkit(module(x.double()))


def test_patched_modules_pickle_and_deepcopy():
    model = nn.Sequential(LlamaRMSNorm(8), GemmaRMSNorm(8), nn.RMSNorm(8), nn.LayerNorm(8))
    normkit.patch(model)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    for clone in (torch.load(buffer, weights_only=False), copy.deepcopy(model)):
        assert [type(m) for m in clone] == [type(m) for m in model]
        assert clone.state_dict().keys() == model.state_dict().keys()


# ----------------------------------------------------------------------------- compilers
def _tiny_llama(device, seed=0):
    torch.manual_seed(seed)
    return TinyLlama(vocab=64, hidden=32, layers=2, heads=2).to(device)


def _loss_and_grads(model, fn, tokens):
    model.zero_grad(set_to_none=True)
    loss = fn(model, tokens)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def test_torch_compile_fullgraph_on_a_patched_model(device):
    """fullgraph=True raises on any graph break; compiled loss and gradients equal eager's."""
    model = _tiny_llama(device)
    assert normkit.patch(model) == 5
    tokens = torch.randint(64, (2, 17), generator=torch.Generator().manual_seed(0)).to(device)
    backend = "inductor" if device == "cuda" else "aot_eager"
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    loss, grads = _loss_and_grads(model, loss_fn, tokens)
    loss_c, grads_c = _loss_and_grads(compiled, loss_fn, tokens)
    torch.testing.assert_close(loss_c, loss)
    for a, b in zip(grads_c, grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_cuda_graph_of_a_patched_training_step():
    model = _tiny_llama("cuda")
    normkit.patch(model)
    reference = copy.deepcopy(model)
    tokens = torch.randint(64, (2, 17), device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up (kernel compilation, allocator) outside the capture
        for _ in range(2):
            _loss_and_grads(model, loss_fn, tokens)
    torch.cuda.current_stream().wait_stream(stream)
    model.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        loss = loss_fn(model, tokens)
        loss.backward()
    tokens.copy_(torch.randint(64, (2, 17), device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    loss_ref, grads_ref = _loss_and_grads(reference, loss_fn, tokens)
    torch.testing.assert_close(loss.detach(), loss_ref)
    for p, g in zip(model.parameters(), grads_ref):
        torch.testing.assert_close(p.grad, g, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- transformers
def _hf_model(family, dtype=torch.float32):
    transformers = pytest.importorskip("transformers")
    config = getattr(transformers, f"{family}Config")(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=64)
    config._attn_implementation = "eager"  # Gemma2 has no SDPA path; the same attention everywhere
    torch.manual_seed(0)
    model = getattr(transformers, f"{family}ForCausalLM")(config)
    for name, p in model.named_parameters():
        if "norm" in name:  # away from the initial ones/zeros, so the weight path is exercised
            with torch.no_grad():
                p.normal_(0.1 if family.startswith("Gemma") else 1.0, 0.2)
    return model.to(dtype)


def _hf_loss(model, tokens):
    return model(input_ids=tokens, labels=tokens).loss


HF_FAMILIES = {"Llama": 5, "Qwen3": 9, "Gemma2": 9}  # norms: 2 a layer + final; Qwen3 adds q/k norms,
# Gemma2 has four a layer (pre/post attention and MLP)


@pytest.mark.parametrize("family", HF_FAMILIES)
def test_hugging_face_tiny_model_matches_unpatched(family, device):
    model = _hf_model(family).to(device)
    reference = copy.deepcopy(model)
    keys = list(model.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every norm of these models is recognised
        assert normkit.patch(model) == HF_FAMILIES[family]
    assert list(model.state_dict()) == keys
    assert_trains_like(model, reference, device)


def assert_trains_like(model, reference, device, before_reference=None):
    """model's loss and gradients on a tiny batch equal the unpatched reference's, eager and under
    torch.compile(fullgraph=True) (which raises on any graph break). before_reference() runs after
    the model's eager step (e.g. to count normkit calls)."""
    tokens = torch.randint(128, (2, 8), generator=torch.Generator().manual_seed(1)).to(device)
    loss, grads = _loss_and_grads(model, _hf_loss, tokens)
    if before_reference is not None:
        before_reference()
    loss_ref, grads_ref = _loss_and_grads(reference, _hf_loss, tokens)
    torch.testing.assert_close(loss, loss_ref, rtol=1e-5, atol=1e-6)
    for (name, _), a, b in zip(model.named_parameters(), grads, grads_ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)
    compiled = torch.compile(model, fullgraph=True, backend="inductor" if device == "cuda" else "aot_eager")
    loss_c, grads_c = _loss_and_grads(compiled, _hf_loss, tokens)
    torch.testing.assert_close(loss_c, loss)
    for (name, _), a, b in zip(model.named_parameters(), grads_c, grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)


def test_hugging_face_tiny_model_in_bf16(device):
    model = _hf_model("Llama", torch.bfloat16).to(device)
    reference = copy.deepcopy(model)
    normkit.patch(model)
    tokens = torch.randint(128, (2, 8), generator=torch.Generator().manual_seed(1)).to(device)
    loss, _ = _loss_and_grads(model, _hf_loss, tokens)
    loss_ref, _ = _loss_and_grads(reference, _hf_loss, tokens)
    torch.testing.assert_close(loss, loss_ref, rtol=2e-2, atol=2e-2)


HF_CLASSES = [  # (transformers.models.<module>, class, the weight's centre: 1 + w for Gemma)
    ("llama", "LlamaRMSNorm", 1.0), ("mistral", "MistralRMSNorm", 1.0), ("qwen2", "Qwen2RMSNorm", 1.0),
    ("qwen3", "Qwen3RMSNorm", 1.0), ("phi3", "Phi3RMSNorm", 1.0), ("olmo2", "Olmo2RMSNorm", 1.0),
    ("gemma", "GemmaRMSNorm", 0.1), ("gemma2", "Gemma2RMSNorm", 0.1), ("gemma3", "Gemma3RMSNorm", 0.1),
    ("gemma3n", "Gemma3nRMSNorm", 1.0), ("llama4", "Llama4TextRMSNorm", 1.0), ("helium", "HeliumRMSNorm", 1.0),
    ("moshi", "MoshiRMSNorm", 1.0),
]


@pytest.mark.parametrize("module_name,class_name,center", HF_CLASSES)
def test_hugging_face_classes_are_reproduced(module_name, class_name, center, device):
    pytest.importorskip("transformers")
    import importlib

    cls = getattr(importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}"), class_name)
    module = _randomise(cls(128, eps=1e-5), center).to(device=device, dtype=torch.bfloat16)
    x, dy = _inputs((6, 128), torch.bfloat16, device)
    compare_module(module, x, dy.to(device), device)
    module = module.float()  # float32: the same up to summation order
    compare_module(module, x.float(), dy.to(device), device)


def test_gemma3n_without_scale(device):
    transformers = pytest.importorskip("transformers")
    module = transformers.models.gemma3n.modeling_gemma3n.Gemma3nRMSNorm(64, eps=1e-6, with_scale=False)
    x, dy = _inputs((6, 64), torch.bfloat16, device)
    compare_module(module.to(device), x, dy.to(device), device)
