"""`python -m normkit bench --model ...`: options, the printed method and table, --json and --csv.

What is measured and how: `normkit.bench.model`; the profile: `normkit.bench.model_profile`.
"""

import argparse
import dataclasses
import sys
from typing import Dict, List, Optional, Sequence

import torch

from . import model_profile, output
from .model import (COMPILE_SCOPES, DEFAULT_VARIANTS, DTYPES, HIDDEN, MODELS, MODES, VARIANTS, Settings, build_config,
                    run)
from . import options
from .options import distinct_outputs, output_path

# Without a GPU normkit's kernels run in Triton's interpreter, ~10^4× slower than compiled: small models only
CPU_MAX_HIDDEN, CPU_MAX_TOKENS = 256, 1024
CPU_EXAMPLE = "--layers 2 --hidden 64 --seq 32 --batch 1 --vocab 1024"


def method(env: Dict) -> str:
    """What is timed and how: printed above the table."""
    s, c = env["settings"], env["config"]
    heads = f"{c['num_attention_heads']} heads × {c['head_dim']} ({c['num_key_value_heads']} KV)"
    lines = [f"{env['device']} · torch {env['torch']} · transformers {env['transformers']} · "
             f"triton {env['triton']} · normkit {env['normkit']} · liger {env['liger']}",
             f"{s['model']}: {env['config_class']}, {c['num_hidden_layers']} layers, hidden {c['hidden_size']}, "
             f"MLP {c['intermediate_size']}, {heads}, vocab {c['vocab_size']}, {env['parameters'] / 1e6:.4g} M "
             f"parameters, {env['attention']} attention; random weights; {s['dtype']} weights, gradients and AdamW "
             f"(lr {env['learning_rate']:g}); batch {s['batch']} × {s['seq']} tokens of random ids"]
    if env["linear_attention"]:
        lines.append(env["linear_attention"])
    scope = "each decoder layer" if s["compile_scope"] == "layers" else "the whole model"
    order = ("sequential: one variant's timed steps after another's (--sequential)" if s["sequential"] else
             "interleaved: the variants of a mode side by side, timed in rounds of one step each, each round "
             "starting one variant later, so GPU clock and power drift fall on all alike")
    lines += [f"Step: forward with labels, backward, AdamW step, zero_grad; host clock between synchronizes. "
              f"{s['warmup']} warm-up step(s) (compilation happens in the first), then {s['steps']} timed: median "
              f"(p20–p80). Every variant starts from a copy of the same model and sees the same batches.",
              f"Order: {order}.",
              f"compile: torch.compile of {scope}; graphs, breaks: what Dynamo compiled. vs stock: stock's median ÷ "
              f"the row's, same mode. loss vs stock: max over all steps of |loss − stock's| / stock's, same mode "
              f"(stock compiled: vs stock eager); ✗ beyond {env['loss_rtol']:g}."]
    return "\n".join(lines)


HEADERS = ("variant", "mode", "step ms, median (p20–p80)", "vs stock", "first step s", "graphs, breaks",
           "loss vs stock")


def table_rows(rows: Sequence[Dict]) -> List[List[str]]:
    stock = {r["mode"]: r["step_s"] for r in rows if r["impl"] == "stock" and "step_s" in r}
    cells = []
    for r in rows:
        if "step_s" not in r:
            cells.append([r["impl"], r["mode"], r.get("unavailable") or "fails: " + r["error"][:70], *[""] * 4])
            continue
        ms = f"{r['step_s'] * 1e3:.1f} ({r['step_p20_s'] * 1e3:.1f}–{r['step_p80_s'] * 1e3:.1f})"
        speedup = f"{stock[r['mode']] / r['step_s']:.3f}×" if r["mode"] in stock else "—"
        loss = "—" if "loss_rel_diff" not in r else f"{r['loss_rel_diff']:.1e}" + (
            " ✗" if r.get("loss_ok") is False else "")
        graphs = f"{r['graphs']}, {r['graph_breaks']}" if "graphs" in r else "—"
        cells.append([r["impl"], r["mode"], ms, speedup, f"{r['first_step_s']:.1f}", graphs, loss])
    return cells


def notes(rows: Sequence[Dict]) -> str:
    """What each variant switched (one line per variant), then the graph breaks of each compiled run."""
    seen = {}
    for r in rows:
        if r.get("note") and r["impl"] not in seen:
            seen[r["impl"]] = r["note"]
    lines = [f"{impl}: {note}" for impl, note in seen.items()]
    lines += [f"{r['impl']} {r['mode']}: {r['graph_breaks']} graph break(s): " + " | ".join(r["graph_break_reasons"])
              for r in rows if r.get("graph_breaks")]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    from .cli import _parse_names  # (cli imports this module)

    def names(allowed, what):
        return lambda text: list(dict.fromkeys(_parse_names(text, allowed, what)))

    p = argparse.ArgumentParser(
        prog="python -m normkit bench",
        description="Training steps of a config-sized Hugging Face model (random weights, no download): stock vs "
                    "normkit.patch vs normkit.patch(fuse_residual=True) vs Liger's RMSNorm, eager and torch.compile. "
                    "Prints step ms, speedup and loss agreement with stock.",
        epilog=f"Without a GPU normkit runs in Triton's interpreter: only --hidden ≤ {CPU_MAX_HIDDEN} and --batch × "
               f"--seq ≤ {CPU_MAX_TOKENS} run, e.g. `python -m normkit bench --model llama {CPU_EXAMPLE} "
               "--modes eager`.")
    default = Settings()
    p.add_argument("--model", required=True, choices=list(MODELS),
                   help="the decoder family, 8 layers of hidden 2048 with its small model's widths")
    p.add_argument("--variants", type=names(VARIANTS, "--variants"), default=list(DEFAULT_VARIANTS),
                   help=f"among {','.join(VARIANTS)} (default: {','.join(DEFAULT_VARIANTS)}; liger when liger_kernel "
                        "imports; traced, fused-traced: patched, fused with torch.compile tracing the norms as their "
                        "Triton kernels, normkit.ops.set_compile_ops('triton'))")
    p.add_argument("--modes", type=names(MODES, "--modes"), default=list(MODES),
                   help="among eager,compile (default: both)")
    for option, help_text in (("batch", "sequences a step"), ("seq", "tokens a sequence"),
                              ("layers", "decoder layers"), ("steps", "timed steps"),
                              ("warmup", "untimed steps first (compilation)")):
        p.add_argument(f"--{option}", type=options.whole_number(f"--{option}"), default=getattr(default, option),
                       help=f"{help_text} (default {getattr(default, option)})")
    p.add_argument("--hidden", type=options.whole_number("--hidden"), default=HIDDEN,
                   help=f"hidden size (default {HIDDEN}); heads, KV heads and MLP width scale with it, head dims stay")
    p.add_argument("--vocab", type=options.whole_number("--vocab"), help="vocabulary size (default: the config's)")
    p.add_argument("--dtype", choices=list(DTYPES), default=default.dtype,
                   help="weights, gradients and optimizer state (default bf16)")
    p.add_argument("--compile-scope", choices=COMPILE_SCOPES, default=default.compile_scope,
                   help="torch.compile each decoder layer (default, as torchtitan does) or the whole model")
    p.add_argument("--sequential", action="store_true",
                   help="time one variant after another (one model in memory at a time) instead of side by side "
                        "in rounds of one step each, which holds every variant of a mode in memory (weights, gradients "
                        "and AdamW state: 5-8 GB a variant at the default size)")
    p.add_argument("--profile", action="store_true",
                   help=f"also profile {model_profile.STEPS} steps per run, in the same order: GPU time by kernel "
                        "group, top kernels (--json: every kernel)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial weights and the batches (default 0)")
    p.add_argument("--json", metavar="PATH", type=output_path("--json"),
                   help="write the result rows and environment as JSON")
    p.add_argument("--csv", metavar="PATH", type=output_path("--csv"),
                   help="write the result rows as CSV, one per variant and mode")
    p.add_argument("--markdown", action="store_true", help="also print the table as markdown")
    return p


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    distinct_outputs(p, args, ("json", "csv"))
    on_gpu = torch.cuda.is_available()
    if not on_gpu and (args.hidden > CPU_MAX_HIDDEN or args.batch * args.seq > CPU_MAX_TOKENS):
        p.error(f"no GPU here: Triton's interpreter runs only --hidden ≤ {CPU_MAX_HIDDEN} and --batch × --seq ≤ "
                f"{CPU_MAX_TOKENS} (given {args.hidden} and {args.batch} × {args.seq}); try {CPU_EXAMPLE}")
    fields = {f.name for f in dataclasses.fields(Settings)}
    settings = Settings(**{k: v for k, v in vars(args).items() if k in fields})
    problem = config_problem(settings)
    if problem:
        p.error(f"--hidden {settings.hidden}, --layers {settings.layers}"
                + (f", --vocab {settings.vocab}" if settings.vocab else "") + f": {problem}")
    rows, env = run(settings, torch.device("cuda" if on_gpu else "cpu"))
    print(method(env))
    print(output.text_table(HEADERS, table_rows(rows)))
    if notes(rows):
        print(notes(rows))
    if settings.profile:
        print("\n" + model_profile.render(rows))
    if args.markdown:
        print("\n" + output.markdown_table(("model", *HEADERS), [[settings.model, *r] for r in table_rows(rows)]))
    return finish(args, rows, env)


def config_problem(settings: Settings) -> Optional[str]:
    """Why the model's transformers config refuses these sizes (its own message), or None."""
    try:
        build_config(settings)
    except Exception as exc:  # transformers' validators raise their own classes, around a ValueError
        cause = exc.__cause__ or exc
        lines = str(cause).strip().splitlines()
        return f"the {settings.model} config refuses them: {lines[-1].strip() if lines else type(cause).__name__}"
    return None


def finish(args: argparse.Namespace, rows: List[Dict], env: Dict) -> int:
    """--json (every row, losses and profiles included) and --csv (its scalar columns); exit status 1 when a
    normkit variant failed or its losses left the tolerance."""
    if args.json:
        output.write_json({"environment": env, "results": rows}, args.json)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            output.write_csv([{k: v for k, v in r.items() if not isinstance(v, (list, dict))} for r in rows], f)
    bad = [r for r in rows if r["impl"] not in ("stock", "liger") and (r.get("error") or r.get("loss_ok") is False)]
    for r in bad:
        print(f"normkit {r['impl']} {r['mode']}: " + (r.get("error") or f"losses {r['loss_rel_diff']:.1e} from "
                                                       f"stock's, beyond {env['loss_rtol']:g}"), file=sys.stderr)
    return 1 if bad else 0
