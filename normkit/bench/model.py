"""`python -m normkit bench --model llama|qwen3|qwen3-next`: training steps of a Hugging Face model.

The model is built from its transformers config with random weights (nothing is downloaded): an
8-layer decoder of hidden size 2048 with the widths of the family's small released model (`MODELS`),
trained in bf16 (weights, gradients and AdamW's state) at batch 4 × 2048 tokens. Each variant —
stock, `normkit.patch(model)` ("patched"), `normkit.patch(model, fuse_residual=True)` ("fused") and
Liger's RMSNorm ("liger"); on request "traced" and "fused-traced", patched and fused with torch.compile
tracing the norms as their Triton kernels (`normkit.ops.set_compile_ops("triton")`) — starts from a deep copy of the same initial model and trains on the same
batches, eager and under torch.compile. The variants of a mode train side by side in rounds of one
step each (`measure`), so that the GPU's clock and power drift over a run weighs on all alike
(`--sequential`: one after another, one model in memory at a time). Printed per variant and mode: the
median step time with its p20–p80, the speedup over stock in that mode, and how far its losses are from
stock's (`model_cli.method` says exactly what is timed). `--profile` adds the top GPU kernels of a few
steps per run (`normkit.bench.model_profile`). The command line, table and files: `normkit.bench.model_cli`.
"""

import collections
import contextlib
import copy
import dataclasses
import importlib
import importlib.metadata
import importlib.util
import time
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from . import model_profile, output, timing

HIDDEN = 2048  # the widths below are the released models' at this hidden size; --hidden scales them


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A decoder family at HIDDEN: its transformers config class and the widths set on it; every other
    field keeps the config class's default (vocabulary, eps, rope, attention implementation)."""

    config: str                 # transformers config class
    liger: str                  # liger_kernel.transformers function that switches its RMSNorms
    kv_heads: int
    group: int                  # query heads per KV head
    head_dim: int
    intermediate: int           # MLP width
    linear_key_heads: int = 0   # Qwen3-Next's gated delta-net layers (value heads: twice as many)
    dense_mlp: bool = False     # every layer's MLP dense, no experts


MODELS: Dict[str, ModelSpec] = {
    # Llama 3.2 1B: 32 heads of 64 over 8 KV heads, MLP 8192
    "llama": ModelSpec("LlamaConfig", "apply_liger_kernel_to_llama", kv_heads=8, group=4, head_dim=64,
                       intermediate=8192),
    # Qwen3-1.7B: 16 heads of 128 over 8 KV heads, MLP 6144; q_norm and k_norm on every head
    "qwen3": ModelSpec("Qwen3Config", "apply_liger_kernel_to_qwen3", kv_heads=8, group=2, head_dim=128,
                       intermediate=6144),
    # Qwen3NextConfig's defaults (Qwen3-Next-80B-A3B: 16 heads of 256 over 2 KV heads; 3 layers in 4 gated
    # delta-nets of 16 key / 32 value heads of 128), the MLP dense at the config's 5632: 512 experts a
    # layer would make 8 layers 13 B parameters and time the router rather than the norms
    "qwen3-next": ModelSpec("Qwen3NextConfig", "apply_liger_kernel_to_qwen3_next", kv_heads=2, group=8,
                            head_dim=256, intermediate=5632, linear_key_heads=16, dense_mlp=True),
}
VARIANTS = ("stock", "patched", "fused", "liger", "traced", "fused-traced")
# the traced variants differ from patched / fused under torch.compile only, and their path is opt-in: asked for by name
DEFAULT_VARIANTS = ("stock", "patched", "fused", "liger")
MODES = ("eager", "compile")
COMPILE_SCOPES = ("layers", "model")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# 3e-4, a usual pre-training rate: weights move enough each step that a changed gradient shows in the next loss
LEARNING_RATE = 3e-4
# Largest relative loss difference from stock a normkit variant may show: 10× what 7 steps of the tiny bf16
# models on CPU showed (≤ 1e-4, from the fused add's rounding and the backward's summation order); fp32: equal
LOSS_RTOL = {torch.bfloat16: 1e-3, torch.float16: 1e-3, torch.float32: 1e-5}


@dataclasses.dataclass
class Settings:
    """What one `bench --model` run measures (the command line's options)."""

    model: str = "llama"
    variants: Sequence[str] = DEFAULT_VARIANTS
    modes: Sequence[str] = MODES
    batch: int = 4
    seq: int = 2048
    layers: int = 8
    hidden: int = HIDDEN
    vocab: Optional[int] = None  # None: the config's default
    steps: int = 10
    warmup: int = 3  # the first step compiles; later warm-up steps absorb recompiles and allocator growth
    dtype: str = "bf16"
    compile_scope: str = "layers"
    profile: bool = False
    seed: int = 0
    sequential: bool = False  # time one variant after another instead of in interleaved rounds


def _scaled(width: int, hidden: int) -> int:
    return max(1, width * hidden // HIDDEN)


def build_config(settings: Settings):
    """The transformers config of `settings.model` at --layers, --hidden (widths scaled by hidden / 2048,
    head dims kept) and --vocab."""
    import transformers

    spec, hidden = MODELS[settings.model], settings.hidden
    kv_heads = _scaled(spec.kv_heads, hidden)
    fields = {"hidden_size": hidden, "num_hidden_layers": settings.layers, "head_dim": spec.head_dim,
              "num_key_value_heads": kv_heads, "num_attention_heads": kv_heads * spec.group,
              "intermediate_size": _scaled(spec.intermediate, hidden)}
    if spec.linear_key_heads:
        key_heads = _scaled(spec.linear_key_heads, hidden)
        fields.update(linear_num_key_heads=key_heads, linear_num_value_heads=2 * key_heads)
    if spec.dense_mlp:
        fields["mlp_only_layers"] = list(range(settings.layers))
    if settings.vocab:
        fields["vocab_size"] = settings.vocab
    return getattr(transformers, spec.config)(**fields)


def build_model(settings: Settings, device: torch.device) -> torch.nn.Module:
    """The model with its random initial weights (seeded), in --dtype on `device`, in training mode."""
    import transformers

    torch.manual_seed(settings.seed)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(build_config(settings))
    return model.to(device=device, dtype=DTYPES[settings.dtype]).train()


def make_batches(settings: Settings, vocab: int, device: torch.device) -> List[torch.Tensor]:
    """One batch of random token ids per step (warm-up and timed), the same for every variant."""
    generator = torch.Generator().manual_seed(settings.seed + 1)
    return [torch.randint(vocab, (settings.batch, settings.seq), generator=generator).to(device)
            for _ in range(settings.warmup + settings.steps)]


class Unavailable(Exception):
    """A variant that cannot run here (its package is not installed)."""


def apply_variant(model: torch.nn.Module, variant: str, settings: Settings) -> str:
    """Switch `model`'s norms as `variant` says, in place; returns a note of what changed."""
    if variant == "stock":
        return ""
    if variant == "liger":
        return _apply_liger(model, MODELS[settings.model])
    import normkit

    with warnings.catch_warnings(record=True):  # what patch leaves alone is in its report, shown below
        warnings.simplefilter("always")
        report = normkit.patch(model, fuse_residual=variant.startswith("fused"))
    parts = ["norms: " + ", ".join(f"{name} ×{len(names)}" for name, names in report.switched.items())]
    if report.fused:
        parts.append("fused: " + ", ".join(f"{name} ×{len(names)}" for name, names in report.fused.items()))
    parts += [f"left alone: {name} ×{len(names)} ({reason})" for (name, reason), names in report.left_alone.items()]
    return "; ".join(parts)


def _apply_liger(model: torch.nn.Module, spec: ModelSpec) -> str:
    """Liger's RMSNorm on every RMSNorm its patch function knows (only rms_norm: its rope, SwiGLU and loss stay off)."""
    try:
        import liger_kernel.transformers as liger
    except ImportError:
        raise Unavailable("not installed") from None
    modeling = importlib.import_module(type(model).__module__)
    saved = dict(vars(modeling))
    try:
        getattr(liger, spec.liger)(rope=False, cross_entropy=False, fused_linear_cross_entropy=False,
                                   rms_norm=True, swiglu=False, model=model)
    finally:  # Liger also rebinds the modeling module's classes: later models of this process stay stock
        vars(modeling).update(saved)
    return f"liger {version('liger-kernel')}: {spec.liger}(rms_norm=True, the rest off)"


def compile_model(model: torch.nn.Module, scope: str) -> None:
    """torch.compile in place: each decoder layer (as torchtitan does; same-code layers share one graph)
    or the whole model."""
    if scope == "model":
        model.compile()
        return
    for layer in getattr(model, model.base_model_prefix).layers:
        layer.compile()


@contextlib.contextmanager
def compile_ops(variant: str):
    """What torch.compile traces for normkit's norms during a step of `variant`: the Triton kernels for the
    traced variants, else the mode set before (Dynamo guards on it: each variant keeps its own graphs)."""
    from .. import ops

    saved = ops.get_compile_ops()
    ops.set_compile_ops("triton" if variant.endswith("traced") else saved)
    try:
        yield
    finally:
        ops.set_compile_ops(saved)


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, tokens: torch.Tensor) -> torch.Tensor:
    """Forward with labels (transformers' shifted cross-entropy), backward, AdamW step, gradients cleared."""
    loss = model(input_ids=tokens, labels=tokens, use_cache=False).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _dynamo_counts() -> Tuple[int, collections.Counter]:
    counters = torch._dynamo.utils.counters
    return counters["stats"]["unique_graphs"], collections.Counter(counters["graph_break"])


@dataclasses.dataclass
class Trainer:
    """One variant in one mode: its own copy of the model and optimizer, and what its steps measured."""

    row: Dict
    batches: Sequence[torch.Tensor]
    settings: Settings
    device: torch.device
    model: Optional[torch.nn.Module] = None  # None once it failed or finished: its memory goes back
    optimizer: Optional[torch.optim.Optimizer] = None
    times: List[float] = dataclasses.field(default_factory=list)  # timed steps only
    losses: List[float] = dataclasses.field(default_factory=list)  # every step, warm-up included
    positions: List[int] = dataclasses.field(default_factory=list)  # its place in each timed round, 0 first
    graphs: int = 0  # what Dynamo compiled during this variant's steps
    breaks: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    kernels: Dict[str, List[float]] = dataclasses.field(default_factory=dict)  # --profile: name → [calls, µs]

    def prepare(self, base: torch.nn.Module) -> None:
        """A copy of `base` switched to the variant, compiled in "compile" mode, through the warm-up steps."""
        self.model = copy.deepcopy(base)
        self.row["note"] = apply_variant(self.model, self.row["impl"], self.settings)
        if self.row["mode"] == "compile":
            compile_model(self.model, self.settings.compile_scope)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=LEARNING_RATE)
        for index in range(self.settings.warmup):
            seconds, loss = self.step(index)
            self.row.setdefault("first_step_s", seconds)
            self.losses.append(loss)

    def step(self, index: int) -> Tuple[float, float]:
        """Train on batch `index`: (seconds between synchronizes, loss)."""
        # seeded by step: dropout (none in these configs) draws alike in every variant, interleaved or not
        torch.manual_seed(self.settings.seed + 1 + index)
        graphs, breaks = _dynamo_counts()
        _synchronize(self.device)
        start = time.perf_counter()
        with compile_ops(self.row["impl"]):
            loss = train_step(self.model, self.optimizer, self.batches[index])
        _synchronize(self.device)
        seconds = time.perf_counter() - start
        after_graphs, after_breaks = _dynamo_counts()
        self.graphs += after_graphs - graphs
        self.breaks.update(after_breaks - breaks)
        return seconds, loss.item()

    def timed_step(self, index: int, position: int) -> None:
        seconds, loss = self.step(index)
        self.times.append(seconds)
        self.losses.append(loss)
        self.positions.append(position)

    def fail(self, exc: Exception) -> None:
        from .cli import first_line  # (cli imports this module)

        if isinstance(exc, Unavailable):
            self.row["unavailable"] = str(exc)
        else:
            self.row["error"] = first_line(exc)
        self.model = self.optimizer = None

    def finish(self) -> None:
        """The row's step statistics, losses, compile counts and profile; the model's memory goes back."""
        if self.model is None:
            return
        p20, median, p80 = timing.spread(self.times)
        self.row.update({"step_s": median, "step_p20_s": p20, "step_p80_s": p80, "step_min_s": min(self.times),
                         "times_s": self.times, "round_positions": self.positions, "losses": self.losses})
        if self.row["mode"] == "compile":
            self.row.update({"graphs": self.graphs, "graph_breaks": sum(self.breaks.values()),
                             "graph_break_reasons": [r.splitlines()[0][:200] for r in list(self.breaks)[:5]]})
        if self.kernels:
            self.row["profile"] = model_profile.summary(self.kernels, model_profile.STEPS, self.device)
        self.model = self.optimizer = None


def rotated(items: Sequence, shift: int) -> List:
    """`items` starting from item `shift` (mod their count): round k of an interleaved run starts one later."""
    shift = shift % len(items) if items else 0
    return list(items[shift:]) + list(items[:shift])


def measure(base: torch.nn.Module, rows: List[Dict], batches: Sequence[torch.Tensor], settings: Settings,
            device: torch.device) -> None:
    """Fill `rows` (variants of one mode, timed together): each variant gets a copy of `base` and its warm-up
    steps, then the timed steps run in rounds, step k of every variant before step k + 1 of any, so clock and
    power drift fall on all alike; --profile's steps after them run in rounds too."""
    trainers = [Trainer(row, batches, settings, device) for row in rows]
    for trainer in trainers:
        try:
            trainer.prepare(base)
        except Exception as exc:  # one variant failing (a compile error) must not stop the others
            trainer.fail(exc)
    rounds = [(k, settings.warmup + k) for k in range(settings.steps)]
    if settings.profile:
        rounds += [(k, None) for k in range(model_profile.STEPS)]  # the last batch again, untimed, traced
    for k, index in rounds:
        for position, trainer in enumerate(rotated([t for t in trainers if t.model is not None], k)):
            try:
                if index is None:
                    model_profile.record(lambda: trainer.step(len(batches) - 1), device, trainer.kernels)
                else:
                    trainer.timed_step(index, position)
            except Exception as exc:
                trainer.fail(exc)
    for trainer in trainers:
        trainer.finish()


def run(settings: Settings, device: torch.device, quiet: bool = False) -> Tuple[List[Dict], Dict]:
    """Every variant × mode of `settings`; returns (result rows, environment)."""
    for name, given, allowed in (("model", [settings.model], MODELS), ("variants", settings.variants, VARIANTS),
                                 ("modes", settings.modes, MODES), ("compile_scope", [settings.compile_scope],
                                                                    COMPILE_SCOPES)):
        if not given or any(g not in allowed for g in given):
            raise ValueError(f"{name} must be among {', '.join(allowed)}, got {given!r}")
    base = build_model(settings, device)
    env = environment(settings, base, device)
    batches = make_batches(settings, base.config.vocab_size, device)
    # interleaved: every variant of a mode at once; --sequential: one at a time, a fraction of the memory
    groups = [[v] for v in settings.variants] if settings.sequential else [list(settings.variants)]
    runs = [(mode, group) for mode in settings.modes for group in groups]
    rows = []
    for mode, group in runs if quiet else output.progress(runs, f"bench --model {settings.model}"):
        # the family/impl/dtype/m/n keys of the kernel benchmark's rows: m tokens a step, n the hidden size
        group_rows = [{"family": "model", "model": settings.model, "impl": variant, "mode": mode,
                       "dtype": str(DTYPES[settings.dtype]), "m": settings.batch * settings.seq,
                       "n": settings.hidden} for variant in group]
        torch._dynamo.reset()  # no earlier group's graphs count towards this one's recompile limit
        # every variant's layers add entries to one code object's cache (the layers' shared forward): a limit each
        limit = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") else "cache_size_limit"
        with torch._dynamo.config.patch(**{limit: getattr(torch._dynamo.config, limit) * len(group)}):
            measure(base, group_rows, batches, settings, device)
        rows += group_rows
        if device.type == "cuda":
            torch.cuda.empty_cache()
    add_loss_agreement(rows, LOSS_RTOL[DTYPES[settings.dtype]])
    return rows, env


def add_loss_agreement(rows: List[Dict], rtol: float) -> None:
    """Each row's `loss_rel_diff`: max over steps of |loss − stock's| / |stock's|, stock of the same mode
    (stock compiled: against stock eager); `loss_ok` for the non-stock rows: within `rtol`."""
    stock = {r["mode"]: r["losses"] for r in rows if r["impl"] == "stock" and "losses" in r}
    for r in rows:
        reference = stock.get("eager" if r["impl"] == "stock" else r["mode"])
        if "losses" not in r or reference is None or (r["impl"] == "stock" and r["mode"] == "eager"):
            continue
        r["loss_reference"] = f"stock {'eager' if r['impl'] == 'stock' else r['mode']}"
        r["loss_rel_diff"] = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], reference))
        if r["impl"] != "stock":
            r["loss_ok"] = r["loss_rel_diff"] <= rtol


def environment(settings: Settings, model: torch.nn.Module, device: torch.device) -> Dict:
    """Device, versions, the model's shape and how it was run."""
    import transformers

    from .. import lowlevel

    info, config = lowlevel.runtime_info(), model.config
    return {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
            "normkit": info["normkit"], "torch": info["torch"], "triton": info["triton"],
            "transformers": transformers.__version__, "liger": version("liger-kernel"),
            "settings": dataclasses.asdict(settings),
            "config": {k: getattr(config, k, None) for k in (
                "hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads",
                "num_key_value_heads", "head_dim", "vocab_size", "linear_num_key_heads", "linear_num_value_heads")},
            "config_class": type(config).__name__, "attention": getattr(config, "_attn_implementation", None),
            "parameters": sum(p.numel() for p in model.parameters()), "loss_rtol": LOSS_RTOL[DTYPES[settings.dtype]],
            "learning_rate": LEARNING_RATE, "linear_attention": linear_attention_note(model)}


def version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def linear_attention_note(model: torch.nn.Module) -> Optional[str]:
    """Which implementation a Qwen3-Next model's gated delta-net layers run; None for other models."""
    mixers = [m for m in model.modules() if type(m).__name__.endswith("GatedDeltaNet")]
    if not mixers:
        return None
    packages = [f"{dist} {version(dist) if importlib.util.find_spec(module) else 'not installed'}"
                for module, dist in (("fla", "flash-linear-attention"), ("causal_conv1d", "causal-conv1d"))]
    if all("not installed" in p for p in packages):
        path = ("transformers' PyTorch fallback (the chunked gated delta rule as PyTorch ops, F.conv1d), "
                "on CUDA as on CPU")
    else:
        path = "the installed packages for CUDA inputs, transformers' PyTorch fallback for CPU inputs"
    norms = sorted({type(m.norm).__name__ for m in mixers if hasattr(m, "norm")})
    return (f"{len(mixers)} of {model.config.num_hidden_layers} layers are gated delta-nets: {', '.join(packages)}: "
            f"they run {path}; their gated norm: {', '.join(norms)}")
