"""Registers, spills and barriers of the heuristic's tiles, compiled as the launcher compiles them.

For each family and width: the tile `normkit.config.tile_config` picks on an H200 (132 SMs), the
kernel specialised like a launch of contiguous tensors (16-divisible pointers, unit column stride:
`compile_check.launch_specialisation`), compiled for sm_90 on this machine (no GPU needed); prints
ptxas' registers and spilled bytes and the PTX's bar.sync / shfl.sync counts (per row block: the
row loop's body appears once in the PTX); for split parts also the exchange's atomic words sent and
spin waits a row block (staged parts: each wait an L2 round trip in the row block's critical path).
With --sass, also the SASS of the kernel's largest loop (the row loop; `nvdisasm` of the cubin): its
instructions a thread an iteration, per element the thread owns (BLOCK_M·BLOCK_N / threads), by
opcode and by the source line they came from — what an issue-bound tile spends (H200: the split parts
issue 0.45-0.51 instructions a cycle a scheduler, and 6-10 % fewer moved their time by ±1 %: they are
latency-bound, not issue-bound).
Run without TRITON_INTERPRET:

    python tools/ptx_stats.py --kind bwd --families layer_norm,rms --widths 1024,2048,4096,8192
    python tools/ptx_stats.py --kind bwd --families rms --widths 32768 --sass
"""

import argparse
import collections
import dataclasses
import os
import re
import subprocess
import sys
import tempfile

import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's normkit
import compile_check as cc  # noqa: E402
from normkit import config as cfg  # noqa: E402
from normkit import launchers  # noqa: E402
from normkit.bench.cli import _parse_names  # noqa: E402
from normkit.bench.options import whole_number  # noqa: E402
from normkit.bench.options import whole_numbers  # noqa: E402
from normkit.kernels import norm_bwd_kernel, norm_fwd_kernel  # noqa: E402

SMS = 132  # an H200


def constexprs(kind, family, config, dtype):
    """The constexpr flags a training call of `family` passes (weight; LayerNorm: bias, mean;
    fused add: residual / dresidual_out), plus the tile."""
    rms, residual = family != "layer_norm", family == "fused_add"
    compute = tl.float64 if dtype == "fp64" else tl.float32
    c = dict(BLOCK_M=config.block_m, BLOCK_N=config.block_n, ONE_TILE=config.one_tile, IS_RMS_NORM=rms,
             HAS_WEIGHT=True, HAS_BIAS=not rms, COMPUTE_DTYPE=compute, X_HAT_DTYPE=compute,
             BF16_PAIRS=cfg.takes_pairs(config, backward=kind == "bwd"),  # as the launchers launch on an NVIDIA GPU
             PTX=True)
    if kind == "fwd":
        # as the launchers launch them: the offset add for RMSNorm only, LayerNorm's whole rows unmasked (EVEN_ROWS)
        c.update(HAS_RESIDUAL=residual, STORE_RESIDUAL_OUT=residual, STORE_STATS=True, HAS_WEIGHT_OFFSET=rms,
                 EVEN_ROWS=not rms and config.one_tile and not config.split,
                 STREAM=config.one_tile and not residual and config.block_n >= launchers._STREAM_MIN_N,
                 RELOAD=config.reload, COLUMN_STAGES=config.column_stages or None,
                 CENTERED_PASS=config.centered_pass, HOLD_WEIGHT=config.hold_weight)
        if rms:
            c.update(B=None, MEAN=None)
        if not residual:
            c.update(RESIDUAL=None, RESIDUAL_OUT=None)
        c.update(SPLIT=8, SPLIT_STAGES=config.async_stages or None) if config.split else c.update(XCHG=None)
        return c
    c.update(HAS_DRESIDUAL=residual, RECOMPUTE_STATS=False, SPLIT=cfg.next_power_of_2(cfg.split_parts(config, 0))
             if not config.split else 8, PREFETCH=config.prefetch,
             JOIN_SUMS=config.joined_sums, ASYNC_STAGES=config.async_stages or None, RELOAD=config.reload)
    if rms:
        c.update(MEAN=None, DB_PARTIAL=None)
    if not residual:
        c.update(DRESIDUAL_OUT=None)
    if not config.split:
        c.update(XCHG=None)
    return c


def sass_lines(cubin: bytes):
    """[(address, opcode, source "file:line")] of the cubin's instructions (nvdisasm -c -g), and
    {label: address}."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
    text = subprocess.run([os.path.join(os.path.dirname(cc.PTXAS), "nvdisasm"), "-c", "-g", f.name],
                          capture_output=True, text=True, check=True).stdout
    os.unlink(f.name)
    return parse_sass(text)


def parse_sass(text: str):
    """nvdisasm -c -g text → ([(address, opcode, target label or None, source)], {label: address})."""
    instructions, labels, pending, source = [], {}, [], None
    for line in text.splitlines():
        found = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if found:
            source = f"{os.path.basename(found.group(1))}:{found.group(2)}"
            continue
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            pending.append(label.group(1))
            continue
        found = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if found:
            address = int(found.group(1), 16)
            labels.update((name, address) for name in pending)
            pending = []
            body = re.sub(r"^@!?U?P\w+\s+", "", found.group(2))
            target = re.search(r"`\((\.L_x_\d+)\)", body)
            instructions.append((address, body.split()[0], target.group(1) if target else None, source))
    return instructions, labels


def largest_loop(instructions, labels):
    """The instructions between the target of a backward branch and the branch, for the branch
    spanning the most: the row loop (nested loops, such as the exchange's poll, lie inside it)."""
    spans = [(labels[target], address) for address, opcode, target, _ in instructions
             if opcode.startswith("BRA") and target in labels and labels[target] <= address]
    if not spans:
        return []
    low, high = max(spans, key=lambda span: span[1] - span[0])
    return [i for i in instructions if low <= i[0] <= high]


def loop_report(loop, elements_per_thread: int, top: int = 12) -> str:
    """The loop's instruction count (per element a thread owns), its opcodes and source lines."""
    opcodes = collections.Counter(opcode.split(".")[0] for _, opcode, _, _ in loop)
    sources = collections.Counter(source for *_, source in loop)
    return (f"  row loop: {len(loop)} instructions a thread an iteration, {len(loop) / elements_per_thread:.1f} an "
            f"element ({elements_per_thread} a thread)\n"
            f"    opcodes: {', '.join(f'{k} {v}' for k, v in opcodes.most_common(top))}\n"
            f"    lines:   {', '.join(f'{k} {v}' for k, v in sources.most_common(top))}")


def parse_tile(text):
    """"1x2048w4pj" → TileConfig(1, 2048, one_tile, 4 warps, prefetch, joined sums); a suffix "s3"
    stages the row loop's loads 3 deep in shared memory (async_stages); "c": the column path
    (one_tile False: statistics first, then the row read again); "S": a split-row part (backward),
    "Sr" one re-reading the previous row block after the exchange (reload)."""
    text, _, stages = text.partition("s")
    rows, rest = text.split("x")
    width, rest = rest.split("w")
    warps = rest.rstrip("pjcSr")
    return cfg.TileConfig(int(rows), int(width), "c" not in rest, int(warps), prefetch="p" in rest,
                          joined_sums="j" in rest, async_stages=int(stages or 0), split="S" in rest,
                          reload="S" in rest and "r" in rest)


FAMILIES = ("rms", "fused_add", "layer_norm")


def _families(text):
    return _parse_names(text, FAMILIES, "--families")


def _tile(text):
    try:
        return parse_tile(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--tile must look like ROWSxWIDTHwWARPS[p][j][c][S][r][sK], e.g. 1x2048w4pj, "
                                         f"got {text!r}") from None


def _flags(text):
    try:
        return {name.strip(): int(value) for name, value in (f.split("=") for f in text.split(",") if f.strip())}
    except ValueError:
        raise argparse.ArgumentTypeError(f"--flags must be NAME=INT,..., e.g. BF16_PAIRS=0, got {text!r}") from None


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=["fwd", "bwd"], default="bwd")
    p.add_argument("--families", type=_families, default=",".join(FAMILIES), help="among " + ",".join(FAMILIES))
    p.add_argument("--widths", type=whole_numbers("--widths"), default="1024,2048,4096,8192", help="row lengths N")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    p.add_argument("--out-dtype", choices=["bf16", "fp16", "fp32"],
                   help="forward: y's dtype (out_dtype; default x's) — the heuristic's tile takes its size")
    p.add_argument("--residual-dtype", choices=["bf16", "fp16", "fp32"],
                   help="forward: the residual's and residual_out's dtype (residual_dtype; default x's)")
    p.add_argument("--tile", type=_tile, help="this tile instead of the heuristic's, ROWSxWIDTHwWARPS[p][j][c][S] (p: prefetch, "
                                  "j: joined sums, c: column path, S: split-row part, r: with S, reload, sK: async_stages K), e.g. 1x2048w4pj; --widths then gives N")
    p.add_argument("--num-stages", type=whole_number("--num-stages"), default=3, help="the launch's num_stages (software pipelining of loops)")
    p.add_argument("--flags", type=_flags, default={}, help="extra constexprs for an experiment, NAME=INT,..., e.g. BF16_PAIRS=0")
    p.add_argument("--recompute", action="store_true",
                   help="backward: statistics recomputed in the kernel (no saved mean / rstd)")
    p.add_argument("--max-registers", type=int, default=None,
                   help="ptxas' register cap (Triton's maxnreg) instead of the tile's, e.g. 128")
    p.add_argument("--sass", action="store_true",
                   help="also the row loop's SASS: instructions a thread an iteration and per element, by opcode "
                        "and source line")
    args = p.parse_args(argv)
    if args.kind != "fwd" and (args.out_dtype or args.residual_dtype):
        p.error(f"--out-dtype and --residual-dtype are the forward's (--kind fwd), got --kind {args.kind}")
    if args.residual_dtype and "fused_add" not in args.families:
        p.error(f"--residual-dtype is the fused add's (its residual's dtype), got --families {','.join(args.families)}")
    if args.recompute and args.kind != "bwd":
        p.error(f"--recompute is the backward's (the forward computes the statistics), got --kind {args.kind}")
    kernel = norm_fwd_kernel if args.kind == "fwd" else norm_bwd_kernel
    unknown = [name for name in args.flags if name not in kernel.arg_names]
    if unknown:
        p.error(f"--flags names the {args.kind} kernel's constexprs, got {', '.join(unknown)}")
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("ptx_stats: unset TRITON_INTERPRET (the kernels must be JIT functions)", file=sys.stderr)
        return 2
    extra = dict(args.flags)
    if args.recompute:
        extra.update(RECOMPUTE_STATS=True, RSTD=None, MEAN=None)
    pointers = dict(cc.FWD_POINTERS if args.kind == "fwd" else cc.BWD_POINTERS)
    if args.out_dtype:
        pointers["Y"] = "*" + args.out_dtype
    if args.residual_dtype:
        pointers.update(RESIDUAL="*" + args.residual_dtype, RESIDUAL_OUT="*" + args.residual_dtype)
    sizes = {"bf16": 2, "fp16": 2, "fp32": 4}
    for family in args.families:
        for n in args.widths:
            config = args.tile if args.tile else cfg.tile_config(
                n, args.kind == "bwd", False, multiprocessors=SMS, residual=family == "fused_add",
                layer_norm=family == "layer_norm", element_size=sizes[args.dtype], recompute=args.recompute,
                out_element_size=sizes[args.out_dtype] if args.out_dtype else 0)
            if args.max_registers is not None:
                config = dataclasses.replace(config, max_registers=args.max_registers)
            launched = constexprs(args.kind, family, config, args.dtype)
            if args.kind == "bwd":  # as launch_bwd: no column mask where N is a multiple of the tile
                launched["EVEN_COLS"] = cfg.even_cols(config, n, sizes[args.dtype])
            if args.recompute:  # as launch_bwd launches it without saved statistics
                launched["JOIN_STATS"] = cfg.joins_stats(config, family == "layer_norm")
            compiled = cc.compile_sm90(kernel, args.dtype, pointers, {**launched, **extra}, config.num_warps, True,
                                       args.num_stages, config.max_registers)
            ptx = compiled.asm["ptx"]
            regs, spill = cc.ptxas_resources(ptx)
            shared = compiled.metadata.shared
            y = f" y {args.out_dtype}" if args.out_dtype else ""
            y += f" residual {args.residual_dtype}" if args.residual_dtype else ""
            print(f"{args.kind} {family:10} {args.dtype}{y} N={n:<6} {config.block_m} x {config.block_n} on "
                  f"{config.num_warps:2} warps{' prefetch' if config.prefetch else ''}{' joined' if config.joined_sums else ''}{' split' if config.split else ''}"
                  f"{f' async {config.async_stages} stages' if config.async_stages else ''}"
                  f"{' reload' if config.reload else ''}{' three-read' if config.centered_pass else ''}"
                  f"{f' cap {config.max_registers}' if config.max_registers else ''}: "
                  f"{regs} registers ({cfg.resident_programs(regs, config.num_warps, 0)} programs an SM fit by registers), {spill} B spilled, "
                  f"{ptx.count('bar.sync')} bar.sync, {ptx.count('shfl.sync')} shfl.sync, "
                  f"{ptx.count('cp.async.cg') + ptx.count('cp.async.ca')} cp.async, {shared} B shared"
                  + (f", exchange: {ptx.count('atom.global')} atomic words sent, {ptx.count('SPIN:')} spin waits "
                     f"reading {ptx.count('ld.relaxed')}" if config.split else ""), flush=True)
            if args.sass:
                elements = config.block_m * config.block_n // (config.num_warps * 32)
                print(loop_report(largest_loop(*sass_lines(compiled.asm["cubin"])), elements), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
