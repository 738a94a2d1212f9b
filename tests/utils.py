"""Comparison helpers: every check is against a float64 reference."""

import torch

# Relative Frobenius error ‖out − ref‖ / ‖ref‖ allowed per dtype (peers land at bf16 1.7e-3,
# fp16 2.1e-4, fp32 < 1e-7; these leave 3-5x headroom for rounding, not for bugs).
REL_TOL = {torch.bfloat16: 8e-3, torch.float16: 1e-3, torch.float32: 1e-6, torch.float64: 1e-13}
# Element-wise: |out − ref| ≤ ELEM_TOL · max|ref| catches a few wrong elements hidden in a norm.
ELEM_TOL = {torch.bfloat16: 2e-2, torch.float16: 3e-3, torch.float32: 1e-5, torch.float64: 1e-12}


def assert_matches(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str = "output") -> None:
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    out64 = out.detach().double().cpu()
    ref64 = ref.detach().double().cpu()
    assert torch.isfinite(out64).all(), f"{what}: non-finite values"
    scale = ref64.abs().max().item() if ref64.numel() else 0.0
    if scale == 0.0:
        assert (out64 == 0).all(), f"{what}: expected exact zeros"
        return
    err = (out64 - ref64).norm().item() / ref64.norm().item()
    assert err <= REL_TOL[dtype], f"{what}: relative error {err:.3e} > {REL_TOL[dtype]:.0e} ({dtype})"
    worst = (out64 - ref64).abs().max().item() / scale
    assert worst <= ELEM_TOL[dtype], f"{what}: worst element off by {worst:.3e} of max|ref| ({dtype})"


def make_inputs(m, n, dtype, device, *, seed=0, weight=True):
    """x ~ N(0, 1), weight ~ 1 + N(0, 0.1²)·… and dy correlated with x (as in training)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, n, generator=g, dtype=torch.float64)
    w = (1.0 + 0.5 * torch.randn(n, generator=g, dtype=torch.float64)) if weight else None
    dy = 0.5 * x + torch.randn(m, n, generator=g, dtype=torch.float64)
    cast = lambda t: None if t is None else t.to(dtype=dtype, device=device)  # noqa: E731
    return cast(x), cast(w), cast(dy)


def ref_fwd(x, w, eps):
    from normkit import reference
    return reference.rms_norm_fwd(x.double().cpu(), None if w is None else w.double().cpu(), eps)


def ref_bwd(x, w, dy, eps):
    from normkit import reference
    return reference.rms_norm_bwd(x.double().cpu(), None if w is None else w.double().cpu(),
                                  dy.double().cpu(), None, eps)


def run_in_threads(target, count: int, fast_switch: bool = False) -> None:
    """Start `count` threads running target(i), wait for all; with fast_switch the interpreter
    switches threads as often as it can (races show up at once)."""
    import sys
    import threading

    old = sys.getswitchinterval()
    if fast_switch:
        sys.setswitchinterval(1e-6)
    try:
        pool = [threading.Thread(target=target, args=(i,)) for i in range(count)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    finally:
        sys.setswitchinterval(old)


def tiny_qwen3_next_config():
    """A 4-layer Qwen3-Next config (three linear-attention layers, one full; 4 small experts) that runs on CPU."""
    import transformers

    return transformers.Qwen3NextConfig(
        vocab_size=128, hidden_size=64, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, linear_num_value_heads=4, linear_num_key_heads=2,
        linear_key_head_dim=16, linear_value_head_dim=16, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=32, shared_expert_intermediate_size=32)
