"""Is the demo's loss gap normkit's, or any re-rounding's? (dev tool, GPU)

Trains the demo model (fp32) from one seed with three RMSNorm implementations that compute the
same function and differ only in rounding: torch.nn.RMSNorm, normkit (via normkit.patch) and a
composite `x · rsqrt(mean(x²) + eps) · w` written in plain torch ops. If the composite drifts
from torch.nn.RMSNorm as far as normkit does, the gap is the training's sensitivity to rounding
(AdamW divides by √v, so a last-bit change in a near-zero gradient becomes a full-size step),
not an error in normkit. Repeated for a few learning rates.

    python tools/demo_control.py --steps 200
"""

import argparse
import dataclasses

import torch
from torch import nn

import normkit
from normkit import demo


class CompositeRMSNorm(nn.Module):
    def __init__(self, norm: nn.RMSNorm):
        super().__init__()
        self.weight, self.eps = norm.weight, norm.eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def to_composite(model: nn.Module) -> None:
    for name, child in model.named_children():
        if isinstance(child, nn.RMSNorm):
            setattr(model, name, CompositeRMSNorm(child))
        else:
            to_composite(child)


def train(config, device, variant, data):
    torch.manual_seed(config.seed)
    model = demo.TinyLlama(config.vocab, config.hidden, config.layers, config.heads).to(device)
    if variant == "normkit":
        normkit.patch(model)
    elif variant == "composite":
        to_composite(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    losses = []
    for tokens in data:
        loss = demo.loss_fn(model, tokens.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return torch.tensor(losses, dtype=torch.float64)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lrs", default="3e-3,1e-3,3e-4")
    args = p.parse_args()
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for lr in map(float, args.lrs.split(",")):
        config = demo.DemoConfig(hidden=512, layers=4, heads=8, seq=256, batch=16, steps=args.steps, dtype="fp32",
                                 lr=lr)
        data = demo.batches(config)
        base = train(config, device, "torch", data)
        again = train(config, device, "torch", data)
        rel = {}
        for variant in ("normkit", "composite"):
            other = train(config, device, variant, data)
            rel[variant] = ((other - base).abs() / base.abs())
        print(f"lr {lr:g}: torch vs torch (rerun) max rel {((again - base).abs() / base).max():.2e}; "
              + "; ".join(f"{k} vs torch: max rel {v.max():.2e}, at step 50 {v[49]:.2e}, last {v[-1]:.2e}"
                          for k, v in rel.items()), flush=True)


if __name__ == "__main__":
    main()
