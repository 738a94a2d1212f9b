"""`tools/compile_check.py --targets`: every tile the heuristics can pick for a GPU, compiled for that GPU ahead of
time on this machine (no GPU needed), its registers, spills and shared memory (LDS) checked against the GPU's
limits (docs/design.md#heuristics).

For each target the enumeration is tests/config_cases.py's `device_picks` with the target's nominal `Device`
record (normkit.config.KNOWN_DEVICES); each pick is compiled as the launchers launch it there: inline PTX (the `PTX`
and `BF16_PAIRS` constexprs, programmatic dependent launch) on NVIDIA targets only, the launch's
specialisation (16-divisible pointers and strides, unit column strides, one weight head); split parts on NVIDIA
targets also as NORMKIT_PORTABLE=1 launches them. A pick fails when it does not compile, asks for more threads,
shared memory or registers than the target has, leaves no program resident, uses more shared memory than
`config.shared_bytes` bounds it by, or carries inline assembly on the portable path (AMD, NORMKIT_PORTABLE=1).
Registers and spills: ptxas -v (NVIDIA), the AMDGCN metadata (AMD).

By default a representative subset (per target, direction, path — whole rows, column tiles, split rows, staged
or not — and x's width: the pick with the largest tile); --full compiles every distinct pick (~20 minutes for
the six targets on two cores).
"""

import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

import compile_check as cc
from normkit import config as cfg
from normkit.kernels import norm_bwd_kernel, norm_fwd_kernel
from normkit.launchers import _STREAM_MIN_N
from tests.config_cases import device_picks

TARGETS = {"sm80": GPUTarget("cuda", 80, 32), "sm89": GPUTarget("cuda", 89, 32), "sm90": GPUTarget("cuda", 90, 32),
           "sm100": GPUTarget("cuda", 100, 32), "gfx942": GPUTarget("hip", "gfx942", 64),
           "gfx950": GPUTarget("hip", "gfx950", 64)}
DTYPES = {2: "bf16", 4: "fp32", 8: "fp64"}
MAX_REGISTERS = {"cuda": 255, "hip": 512}  # a thread's 32-bit registers (AMD: VGPRs and AGPRs together)


def units(device: cfg.Device) -> Dict[tuple, Tuple[cfg.TileConfig, dict, str]]:
    """{compile key: (config, scenario, label)}: the device's picks with the same kernel compiled once."""
    out = {}
    for backward in (False, True):
        for config, scenario, lo, hi in device_picks(device, backward):
            key = _key(config, scenario)
            if key not in out:
                out[key] = (config, scenario, f"{_label(config, scenario)} (N {lo}-{hi})")
    return out


def _key(config, s) -> tuple:
    """What changes the compiled kernel most: the tile, the direction, the family and x's dtype, recomputed
    statistics (a pick's other scenarios — heads, y's and the residual's dtypes, alignment — compile once, as
    the first that picks it)."""
    return config, s["backward"], s["residual"], s["layer_norm"], s["element_size"], s.get("recompute", False)


def _label(config, s) -> str:
    family = ("fused " if s["residual"] else "") + ("layer_norm" if s["layer_norm"] else "rms")
    mode = "split" if config.split else "whole" if config.one_tile else "columns"
    extra = "".join(f" {k}" for k in ("prefetch", "reload", "joined_sums", "hold_weight", "centered_pass")
                    if getattr(config, k))
    extra += f" staged{config.async_stages or config.column_stages}" if config.async_stages or config.column_stages \
        else ""
    extra += f" cap{config.max_registers}" if config.max_registers else ""
    extra += " recompute" if s.get("recompute") else ""
    extra += "" if s.get("vector_aligned", True) else " unaligned"
    return (f"{'bwd' if s['backward'] else 'fwd'} {family} {DTYPES[s['element_size']]} {mode} {config.block_m}x"
            f"{config.block_n} w{config.num_warps}{extra}")


def subset(found: Dict[tuple, tuple]) -> Dict[tuple, tuple]:
    """Per direction, path (whole, columns, split; staged or not) and x's width (2 bytes, or more): the pick with
    the most bytes a tile."""
    best: Dict[tuple, tuple] = {}
    for key, (config, scenario, label) in found.items():
        path = (scenario["backward"], config.split, config.one_tile, bool(config.async_stages or config.column_stages),
                scenario["element_size"] > 2)
        size = config.block_m * config.block_n * scenario["element_size"] * (1 + config.async_stages)
        if path not in best or size > best[path][0]:
            best[path] = (size, key)
    return {key: found[key] for _, key in best.values()}


def constexprs(config: cfg.TileConfig, s: dict, ptx: bool, pdl: bool) -> Tuple[dict, dict, int]:
    """(constexprs, pointer types, heads) of the launch of the pick (launchers.launch_fwd / launch_bwd)."""
    rms, residual, size = not s["layer_norm"], s["residual"], s["element_size"]
    compute = tl.float64 if size == 8 else tl.float32
    c = dict(BLOCK_M=config.block_m, BLOCK_N=config.block_n, ONE_TILE=config.one_tile, IS_RMS_NORM=rms,
             HAS_WEIGHT=True, HAS_BIAS=not rms, COMPUTE_DTYPE=compute, X_HAT_DTYPE=compute, PTX=ptx,
             BF16_PAIRS=ptx and size == 2 and cfg.takes_pairs(config, backward=s["backward"]),
             SPLIT=8 if config.split else 1)
    if not config.split:
        c["XCHG"] = None
    if not s["backward"]:
        pointers = dict(cc.FWD_POINTERS, Y="*" + DTYPES[s.get("out_element_size") or size])
        if residual:
            res = "*" + DTYPES[s.get("residual_element_size") or size]
            pointers.update(RESIDUAL=res, RESIDUAL_OUT=res)
        c.update(HAS_RESIDUAL=residual, STORE_RESIDUAL_OUT=residual, STORE_STATS=True, HAS_WEIGHT_OFFSET=rms,
                 EVEN_ROWS=not rms and config.one_tile and not config.split,
                 STREAM=config.one_tile and not residual and config.block_n >= _STREAM_MIN_N,
                 RELOAD=config.reload, COLUMN_STAGES=config.column_stages or None, CENTERED_PASS=config.centered_pass,
                 HOLD_WEIGHT=config.hold_weight, SPLIT_STAGES=config.async_stages or None)
        if rms:
            c.update(B=None, MEAN=None)
        if not residual:
            c.update(RESIDUAL=None, RESIDUAL_OUT=None)
        return c, pointers, s.get("heads", 1)
    recompute = s.get("recompute", False)
    c.update(HAS_DRESIDUAL=residual, RECOMPUTE_STATS=recompute, PREFETCH=config.prefetch,
             JOIN_SUMS=config.joined_sums, ASYNC_STAGES=config.async_stages or None, RELOAD=config.reload,
             JOIN_STATS=recompute and cfg.joins_stats(config, not rms),
             EVEN_COLS=config.one_tile and size < 4 and s.get("vector_aligned", True), LAUNCH_DEPENDENTS=pdl)
    if rms:
        c.update(MEAN=None, DB_PARTIAL=None)
    if recompute:
        c.update(MEAN=None, RSTD=None)
    if not residual:
        c["DRESIDUAL_OUT"] = None
    return c, dict(cc.BWD_POINTERS), s.get("heads", 1)


def compile_pick(target: GPUTarget, config: cfg.TileConfig, s: dict, ptx: bool = True):
    """The compiled kernel of the pick for the target, as launched (`constexprs`, cc.launch_specialisation);
    inline PTX where the launch takes it (NVIDIA targets, unless ptx=False)."""
    kernel = norm_bwd_kernel if s["backward"] else norm_fwd_kernel
    nvidia = target.backend == "cuda" and ptx
    c, pointers, heads = constexprs(config, s, ptx=nvidia, pdl=nvidia and target.arch >= 90)
    dtype = DTYPES[s["element_size"]]
    c = {**{p.name: p.default for p in kernel.params if p.is_constexpr and p.has_default}, **c}
    signature = cc._signature(kernel, dtype, pointers, c)
    c, attrs = cc.launch_specialisation(kernel, signature, c)
    if heads != 1:
        c.pop("HEADS")
    if not s.get("vector_aligned", True):  # rows that do not load as 16-byte vectors: no divisibility
        attrs = {k: v for k, v in attrs.items() if kernel.arg_names[k[0]] not in ("N",) and
                 not kernel.arg_names[k[0]].startswith("stride_")}
    signature = cc._signature(kernel, dtype, pointers, c)
    options = {"num_warps": config.num_warps, "num_stages": config.num_stages}
    if config.max_registers:
        options["maxnreg"] = config.max_registers
    return triton.compile(cc.ast_source(kernel, signature, c, attrs), target=target, options=options)


def resources(target: GPUTarget, compiled) -> Tuple[int, int]:
    """(registers, spilled bytes) of a compiled kernel: ptxas -v (NVIDIA), the AMDGCN metadata (AMD: VGPRs and
    AGPRs; spills: VGPR and SGPR spill counts, 4 bytes each)."""
    if target.backend == "hip":
        text = compiled.asm["amdgcn"]
        number = lambda name: int((re.search(rf"\.{name}:\s+(\d+)", text) or [0, 0])[1])  # noqa: E731
        return (number("vgpr_count") + number("agpr_count"),
                4 * (number("vgpr_spill_count") + number("sgpr_spill_count")))
    ptxas = cc.PTXAS + ("-blackwell" if target.arch >= 100 else "")
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(compiled.asm["ptx"])
    gpu = f"sm_{target.arch}" + ("a" if target.arch in (90, 100) else "")
    out = subprocess.run([ptxas, "-v", "--gpu-name", gpu, f.name, "-o", os.devnull], capture_output=True,
                         text=True).stderr
    os.unlink(f.name)
    regs, spill = re.search(r"Used (\d+) registers", out), re.search(r"(\d+) bytes spill stores", out)
    return int(regs.group(1)) if regs else -1, int(spill.group(1)) if spill else 0


def check_one(name: str, target: GPUTarget, device: cfg.Device, config, scenario, ptx: bool = True
              ) -> Tuple[List[str], dict]:
    """Problems with one pick on one target (empty: it fits), and what was measured. ptx=False: the portable
    path on an NVIDIA target (NORMKIT_PORTABLE=1)."""
    compiled = compile_pick(target, config, scenario, ptx)
    regs, spill = resources(target, compiled)
    shared, threads = compiled.metadata.shared, config.num_warps * device.warp_size
    problems = []
    if threads > device.threads_per_block:
        problems.append(f"{threads} threads a program, {name} allows {device.threads_per_block}")
    if shared > device.shared_per_block:
        problems.append(f"{shared} B of shared memory a program, {name} allows {device.shared_per_block}")
    if not 0 < regs <= MAX_REGISTERS[target.backend]:
        problems.append(f"{regs} registers a thread, {name} allows {MAX_REGISTERS[target.backend]}")
    elif device.resident(regs, config.num_warps, shared) < 1:
        problems.append(f"no program of it fits a multiprocessor of {name}")
    if (target.backend != "cuda" or not ptx) and "elementwise_inline_asm" in compiled.asm["ttir"]:
        problems.append("inline assembly on the portable path (kernels/ptx.py must take Triton's)")
    estimate = cfg.shared_bytes(config, _problem(scenario), scenario["backward"], device.warp_size)
    if shared > estimate:
        problems.append(f"{shared} B of shared memory, more than config.shared_bytes' bound {estimate}")
    return problems, dict(registers=regs, spilled=spill, shared=shared)


def _problem(s: dict) -> cfg.Problem:
    size = s["element_size"]
    return cfg.Problem(1, residual=s["residual"], layer_norm=s["layer_norm"], x_bytes=size,
                       y_bytes=s.get("out_element_size") or size, residual_bytes=s.get("residual_element_size") or size)


def _check(job):
    """A pool worker's `check_one` (every failure a problem of the pick, not the run's)."""
    name, config, scenario, ptx = job
    try:
        return check_one(name, TARGETS[name], cfg.KNOWN_DEVICES[name], config, scenario, ptx)
    except Exception as error:  # every pick that does not build is reported, not only the first
        return [f"does not compile: {type(error).__name__}: {str(error)[:300]}"], {}


def run(names: List[str], full: bool, jobs: int = 1) -> int:
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("compile_check: unset TRITON_INTERPRET (the kernels must be JIT functions)", file=sys.stderr)
        return 2
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        print(f"compile_check: --targets takes {', '.join(TARGETS)}, got {', '.join(unknown)}", file=sys.stderr)
        return 2
    failures, summary = 0, []
    for name in names:
        device, start = cfg.KNOWN_DEVICES[name], time.time()
        found = units(device)
        chosen = found if full else subset(found)
        worst = dict(registers=0, spilled=0, shared=0)
        # split parts on NVIDIA GPUs twice: spinning in PTX, and portable (NORMKIT_PORTABLE=1)
        nvidia = TARGETS[name].backend == "cuda"
        picks = [(config, scenario, label + ("" if ptx or not nvidia else " portable"), ptx) for config, scenario, label
                 in chosen.values() for ptx in ((True, False) if nvidia and config.split else (nvidia,))]
        work = [(name, config, scenario, ptx) for config, scenario, _, ptx in picks]
        if jobs > 1:
            with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
                results = list(pool.map(_check, work))
        else:
            results = map(_check, work)
        for (config, scenario, label, _), (problems, measured) in zip(picks, results):
            worst = {k: max(v, measured.get(k, 0)) for k, v in worst.items()}
            failures += bool(problems)
            status = "FAIL" if problems else "ok  "
            print(f"{status}  {name:6} {label}: " + (", ".join(f"{v} {k}" for k, v in measured.items()) or "-")
                  + "".join(f"\n        {p}" for p in problems), flush=True)
        summary.append(f"{name:6} {device.ladder:7} {len(chosen):3} of {len(found):3} picks, max {worst['registers']} "
                       f"registers, {worst['spilled']} B spilled, {worst['shared']} B shared of "
                       f"{device.shared_per_block} ({time.time() - start:.0f} s)")
    print("\n".join(["summary (target, tables, compiled):"] + summary))
    return 1 if failures else 0
