"""Compile every kernel family for an H100/H200 (sm_90) without a GPU, and report ptxas resources; with
--targets, every tile the heuristics pick for each of those GPUs, compiled for it (tools/compile_targets.py).

Triton's compiler, the ptxas it ships and its AMD backend run on any machine: this catches kernels that the CPU
interpreter accepts but the GPU compiler rejects, and shows registers and spills per config.
Run without TRITON_INTERPRET (the kernels must be JIT functions):

    python tools/compile_check.py            # a representative set of flag combinations, sm_90
    python tools/compile_check.py --targets sm80,sm89,sm90,sm100,gfx942,gfx950 [--full]
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's normkit (and tests/), not an installed one

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

try:  # Triton 3.2 takes specialisations as an AttrsDescriptor and constexprs outside the signature
    from triton.backends.compiler import AttrsDescriptor
except ImportError:
    AttrsDescriptor = None

from normkit.bench.options import whole_number
from normkit.kernels import norm_bwd_kernel, norm_fwd_kernel, sum_partials_kernel

TARGET = GPUTarget("cuda", 90, 32)
PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
FLOAT_TYPES = {"bf16": tl.bfloat16, "fp16": tl.float16, "fp32": tl.float32, "fp64": tl.float64}


def _signature(kernel, dtype, pointer_names, constexprs):
    sig = {}
    for name in kernel.arg_names:
        if name in constexprs:
            sig[name] = "constexpr"
        elif name in pointer_names:
            sig[name] = pointer_names[name].replace("T", dtype)
        elif name in ("eps", "weight_offset"):
            sig[name] = "fp64"  # annotated tl.float64 in the kernels (Triton's launcher packs doubles)
        else:
            sig[name] = "i32"
    return sig


# float64 arithmetic in a kernel that computes in float32 (e.g. a double scalar promoting a float
# expression): only conversions of the double arguments may mention f64 there.
F64_ARITHMETIC = re.compile(r"^\s*(add|sub|mul|fma|div|sqrt|rsqrt|rcp|max|min|neg|abs)(\.[a-z]+)*\.f64", re.M)


def launch_specialisation(kernel, signature, constexprs):
    """(constexprs, attrs) as a launch of contiguous tensors of one weight head specialises them:
    Triton turns an integer argument equal to 1 into a constant — the unit column strides and HEADS
    (one weight head, the usual launch: without it a LayerNorm forward row of 16384 on 16 warps counted
    63 registers where the launched kernel had 82, run ZZZZZK's Nsight Compute) — and marks the
    pointers, M, N and the row strides 16-divisible, what lets the compiler vectorise the loads.
    Without it (the plain cases above) loads are scalar, so their register and spill figures are not
    the launched kernel's."""
    constexprs = dict(constexprs)
    for name in kernel.arg_names:
        if (name.startswith("stride_") and name.endswith("_col") or name == "HEADS") and name not in constexprs:
            constexprs[name] = 1
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(kernel.arg_names)
             if name not in constexprs and (signature[name].startswith("*") or name in ("M", "N")
                                            or (name.startswith("stride_") and name.endswith("_row")))}
    return constexprs, attrs


def ast_source(kernel, signature, constexprs, attrs) -> ASTSource:
    """Triton's ASTSource of the kernel: signature with "constexpr" entries and attrs as {(index,): [[name, value]]}
    (Triton ≥ 3.3), or for Triton 3.2 the signature without them and attrs as an AttrsDescriptor."""
    if AttrsDescriptor is None:
        return ASTSource(kernel, signature, constexprs, attrs)
    signature = {name: kind for name, kind in signature.items() if kind != "constexpr"}
    hints = {index[0]: value for index, properties in (attrs or {}).items() for _, value in properties}
    return ASTSource(kernel, signature, constexprs, AttrsDescriptor.from_hints(hints))


def compile_ptx(kernel, dtype, pointers, constexprs, num_warps, as_launched=False, num_stages=3) -> str:
    """PTX for sm_90 (optionally with the launch's specialisation, `launch_specialisation`).
    Constexprs with a default that `constexprs` leaves out take it (as a launch without them)."""
    return compile_sm90(kernel, dtype, pointers, constexprs, num_warps, as_launched, num_stages).asm["ptx"]


def compile_sm90(kernel, dtype, pointers, constexprs, num_warps, as_launched=False, num_stages=3, max_registers=0):
    """The compiled kernel (`compile_ptx`'s; its .metadata.shared: the shared memory it asks for);
    max_registers: ptxas' cap (Triton's maxnreg, a TileConfig's max_registers), 0 for none."""
    constexprs = {**{p.name: p.default for p in kernel.params if p.is_constexpr and p.has_default}, **constexprs}
    signature = _signature(kernel, dtype, pointers, constexprs)
    attrs = None
    if as_launched:
        constexprs, attrs = launch_specialisation(kernel, signature, constexprs)
        signature = _signature(kernel, dtype, pointers, constexprs)
    src = ast_source(kernel, signature, constexprs, attrs)
    options = {"num_warps": num_warps, "num_stages": num_stages}
    if max_registers:
        options["maxnreg"] = max_registers
    return triton.compile(src, target=TARGET, options=options)


def ptxas_resources(ptx: str):
    """(registers, spill-store bytes) that ptxas -v reports for sm_90a."""
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    out = subprocess.run([PTXAS, "-v", "--gpu-name", "sm_90a", f.name, "-o", os.devnull],
                         capture_output=True, text=True).stderr
    os.unlink(f.name)
    regs = re.search(r"Used (\d+) registers", out)
    spill = re.search(r"(\d+) bytes spill stores", out)
    return int(regs.group(1)) if regs else -1, int(spill.group(1)) if spill else 0


def compile_one(kernel, dtype, pointers, constexprs, num_warps):
    """Compile for sm_90; return (registers, spill bytes) from ptxas -v."""
    ptx = compile_ptx(kernel, dtype, pointers, constexprs, num_warps)
    if dtype != "fp64" and F64_ARITHMETIC.search(ptx):
        raise AssertionError(f"float64 arithmetic in a {dtype} kernel: {F64_ARITHMETIC.search(ptx).group(0).strip()}")
    return ptxas_resources(ptx)


FWD_POINTERS = {"X": "*T", "RESIDUAL": "*T", "W": "*T", "B": "*T", "GATE": "*T", "Y": "*T", "RESIDUAL_OUT": "*T",
                "MEAN": "*fp32", "RSTD": "*fp32", "XCHG": "*i64"}
BWD_POINTERS = {"X": "*T", "W": "*T", "DY": "*T", "DRESIDUAL_OUT": "*T", "MEAN": "*fp32", "RSTD": "*fp32",
                "GATE": "*T", "DX": "*T", "DW_PARTIAL": "*fp32", "DB_PARTIAL": "*fp32", "DGATE": "*T", "XCHG": "*i64"}


def cases():
    """(name, kernel, dtype, pointers, constexprs, warps): every flag at least once, both tilings."""
    for dtype, one_tile, rms, extra in [("bf16", True, True, False), ("bf16", False, True, True),
                                        ("fp32", True, False, True), ("fp16", False, False, False),
                                        ("fp64", True, True, True)]:
        f64 = dtype == "fp64"
        cdt = tl.float64 if f64 else tl.float32
        pointers = {k: (v if not f64 else v.replace("fp32", "fp64")) for k, v in FWD_POINTERS.items()}
        block = dict(BLOCK_M=2, BLOCK_N=4096 if one_tile else 2048, ONE_TILE=one_tile, IS_RMS_NORM=rms,
                     COMPUTE_DTYPE=cdt, X_HAT_DTYPE=FLOAT_TYPES[dtype] if extra else cdt,
                     BF16_PAIRS=dtype == "bf16",  # the register pairs wherever a bf16 tile may take them
                     PTX=True)  # the split parts' spin wait and rstd load in PTX, as launched on NVIDIA GPUs
        yield (f"fwd {dtype} one_tile={one_tile} rms={rms} all_flags={extra}", norm_fwd_kernel, dtype, pointers,
               dict(block, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_RESIDUAL=extra, STORE_RESIDUAL_OUT=extra,
                    STORE_STATS=True), 8)
        if one_tile:  # y from the row read again (RELOAD: config.forward.RELOAD_MIN)
            yield (f"fwd {dtype} reload rms={rms} all_flags={extra}", norm_fwd_kernel, dtype, pointers,
                   dict(block, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_RESIDUAL=extra, STORE_RESIDUAL_OUT=extra,
                        STORE_STATS=True, RELOAD=True), 8)
            # split rows (the backward's exchange on the forward: forward._split_rows), holding the
            # previous row block; then re-reading it, loads staged, the wait spinning (design change 30)
            yield (f"fwd {dtype} split rms={rms} all_flags={extra}", norm_fwd_kernel, dtype, pointers,
                   dict(block, BLOCK_M=1, BLOCK_N=8192, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_RESIDUAL=extra,
                        STORE_RESIDUAL_OUT=extra, STORE_STATS=True, SPLIT=8), 8)
            yield (f"fwd {dtype} split staged reload rms={rms} all_flags={extra}", norm_fwd_kernel, dtype, pointers,
                   dict(block, BLOCK_M=1, BLOCK_N=2048, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_RESIDUAL=extra,
                        STORE_RESIDUAL_OUT=extra, STORE_STATS=True, SPLIT=8, RELOAD=True, SPLIT_STAGES=3), 4)
            # staged, holding the previous row block (the fused forwards' parts since session 25)
            yield (f"fwd {dtype} split staged held rms={rms} all_flags={extra}", norm_fwd_kernel, dtype, pointers,
                   dict(block, BLOCK_M=1, BLOCK_N=2048, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_RESIDUAL=extra,
                        STORE_RESIDUAL_OUT=extra, STORE_STATS=True, SPLIT=8, SPLIT_STAGES=3), 4)
        if not one_tile and not rms:  # LayerNorm's column tiles: three reads, staged (CENTERED_PASS, COLUMN_STAGES)
            yield (f"fwd {dtype} centered-pass staged all_flags={extra}", norm_fwd_kernel, dtype, pointers,
                   dict(block, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_RESIDUAL=extra, STORE_RESIDUAL_OUT=extra,
                        STORE_STATS=True, CENTERED_PASS=True, COLUMN_STAGES=3), 8)
        pointers = {k: (v if not f64 else v.replace("fp32", "fp64")) for k, v in BWD_POINTERS.items()}
        for recompute in (False, True):
            yield (f"bwd {dtype} one_tile={one_tile} rms={rms} all_flags={extra} recompute={recompute}",
                   norm_bwd_kernel, dtype, pointers,
                   dict(block, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_DRESIDUAL=extra, RECOMPUTE_STATS=recompute,
                        SPLIT=1, PREFETCH=False), 8)
            if one_tile:  # split rows: each part a whole-row tile, the parts exchanging row sums
                yield (f"bwd {dtype} split rms={rms} all_flags={extra} recompute={recompute}",
                       norm_bwd_kernel, dtype, pointers,
                       dict(block, BLOCK_M=1, BLOCK_N=8192, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_DRESIDUAL=extra,
                            RECOMPUTE_STATS=recompute, SPLIT=8, PREFETCH=False), 16)
                # the next row block's tile loaded ahead (whole rows; split parts)
                yield (f"bwd {dtype} prefetch rms={rms} all_flags={extra} recompute={recompute}",
                       norm_bwd_kernel, dtype, pointers,
                       dict(block, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_DRESIDUAL=extra, RECOMPUTE_STATS=recompute,
                            SPLIT=1, PREFETCH=True), 8)
                # the row loop's loads staged in shared memory (cp.async: config.backward.STAGED_WHOLE)
                yield (f"bwd {dtype} async-stages rms={rms} all_flags={extra} recompute={recompute}",
                       norm_bwd_kernel, dtype, pointers,
                       dict(block, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_DRESIDUAL=extra, RECOMPUTE_STATS=recompute,
                            SPLIT=1, PREFETCH=False, ASYNC_STAGES=3), 8)
                # one-row tiles summing Σ(g·h) and Σg in one tree (config.backward.PREFETCH_WHOLE's joined_sums)
                yield (f"bwd {dtype} joined-sums rms={rms} all_flags={extra} recompute={recompute}",
                       norm_bwd_kernel, dtype, pointers,
                       dict(block, BLOCK_M=1, BLOCK_N=8192, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_DRESIDUAL=extra,
                            RECOMPUTE_STATS=recompute, SPLIT=1, PREFETCH=True, JOIN_SUMS=True), 16)
                yield (f"bwd {dtype} split prefetch rms={rms} all_flags={extra} recompute={recompute}",
                       norm_bwd_kernel, dtype, pointers,
                       dict(block, BLOCK_M=1, BLOCK_N=8192, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_DRESIDUAL=extra,
                            RECOMPUTE_STATS=recompute, SPLIT=8, PREFETCH=True), 16)
                # split parts staging their loads, the wait spinning in PTX (design change 30)
                yield (f"bwd {dtype} split staged rms={rms} all_flags={extra} recompute={recompute}",
                       norm_bwd_kernel, dtype, pointers,
                       dict(block, BLOCK_M=1, BLOCK_N=2048, HAS_WEIGHT=True, HAS_BIAS=extra, HAS_DRESIDUAL=extra,
                            RECOMPUTE_STATS=recompute, SPLIT=8, PREFETCH=False, ASYNC_STAGES=3,
                            JOIN_STATS=recompute), 4)
    # Mixed dtypes, with the pointers of disabled flags passed as None (what ops passes): the
    # specializations the uniform sets above miss. LayerNorm without weight, bf16 h and float32 dy
    # on column tiles crashed Triton's OptimizeThreadLocality pass (a row sum added to a
    # loop-carried total with two uses) until the column path summed tiles element-wise.
    for one_tile in (False, True):
        block = dict(BLOCK_M=1 if one_tile else 2, BLOCK_N=4096 if one_tile else 1024, ONE_TILE=one_tile,
                     IS_RMS_NORM=False, COMPUTE_DTYPE=tl.float32, X_HAT_DTYPE=tl.float32)
        warps = 8 if one_tile else 4
        for recompute in (False, True):
            yield (f"bwd mixed one_tile={one_tile} LN no weight bf16 h fp32 dy recompute={recompute}",
                   norm_bwd_kernel, "bf16", dict(BWD_POINTERS, DY="*fp32"),
                   dict(block, HAS_WEIGHT=False, HAS_BIAS=False, HAS_DRESIDUAL=True, RECOMPUTE_STATS=recompute,
                        SPLIT=1, PREFETCH=False, W=None, DW_PARTIAL=None, DB_PARTIAL=None, XCHG=None,
                        **({"MEAN": None, "RSTD": None} if recompute else {})), warps)
        yield (f"bwd mixed one_tile={one_tile} rms fp32 weight bf16 h fp16 dy",
               norm_bwd_kernel, "bf16", dict(BWD_POINTERS, W="*fp32", DY="*fp16"),
               dict(block, IS_RMS_NORM=True, HAS_WEIGHT=True, HAS_BIAS=True, HAS_DRESIDUAL=False,
                    RECOMPUTE_STATS=False, SPLIT=1, PREFETCH=False, DRESIDUAL_OUT=None, MEAN=None, XCHG=None), warps)
        yield (f"fwd mixed one_tile={one_tile} LN no weight bf16 x fp32 residual and y",
               norm_fwd_kernel, "bf16", dict(FWD_POINTERS, RESIDUAL="*fp32", Y="*fp32", RESIDUAL_OUT="*fp32"),
               dict(block, HAS_WEIGHT=False, HAS_BIAS=False, HAS_RESIDUAL=True, STORE_RESIDUAL_OUT=True,
                    STORE_STATS=False, W=None, B=None, MEAN=None, RSTD=None), warps)
    yield from _gated_cases()
    yield ("finisher fp32", sum_partials_kernel, "fp32", {"PARTIAL": "*fp32", "OUT": "*bf16", "OUT2": "*fp32"},
           dict(BLOCK_G=32, BLOCK_N=128), 4)
    # programmatic dependent launch (sm_90+): the backward signals, the finisher waits
    yield ("finisher fp32 pdl", sum_partials_kernel, "fp32", {"PARTIAL": "*fp32", "OUT": "*bf16", "OUT2": "*bf16"},
           dict(BLOCK_G=256, BLOCK_N=16, USE_PDL=True), 4)
    yield ("bwd bf16 pdl rms prefetch", norm_bwd_kernel, "bf16", BWD_POINTERS,
           dict(BLOCK_M=2, BLOCK_N=4096, ONE_TILE=True, IS_RMS_NORM=True, COMPUTE_DTYPE=tl.float32,
                X_HAT_DTYPE=tl.float32, HAS_WEIGHT=True, HAS_BIAS=False, HAS_DRESIDUAL=False, RECOMPUTE_STATS=False,
                SPLIT=1, PREFETCH=True, LAUNCH_DEPENDENTS=True), 16)


def _gated_cases():
    """The gate (HAS_GATE, Qwen3-Next's gated RMSNorm) on every path that takes one: the forward's whole
    rows (held, re-read, streamed) and column tiles; the backward's whole rows (plain, prefetching,
    staged) and column tiles, saved and recomputed statistics; Llama-style rounding of x̂ and u, a
    float32 gate beside bf16 x, and float64."""
    gated = dict(IS_RMS_NORM=True, HAS_WEIGHT=True, HAS_BIAS=False, COMPUTE_DTYPE=tl.float32, HAS_GATE=True)
    for dtype, u_dtype in (("bf16", tl.bfloat16), ("fp16", tl.float32), ("fp32", tl.float32)):
        fwd = dict(gated, HAS_RESIDUAL=False, STORE_RESIDUAL_OUT=False, STORE_STATS=True,
                   X_HAT_DTYPE=FLOAT_TYPES[dtype], U_DTYPE=u_dtype)
        for name, tile in (("whole", dict(BLOCK_M=4, BLOCK_N=128, ONE_TILE=True, STREAM=True)),
                           ("reload", dict(BLOCK_M=1, BLOCK_N=4096, ONE_TILE=True, RELOAD=True)),
                           ("columns", dict(BLOCK_M=1, BLOCK_N=4096, ONE_TILE=False, BF16_PAIRS=dtype == "bf16")),
                           ("row of 16384", dict(BLOCK_M=1, BLOCK_N=16384, ONE_TILE=True, STREAM=True))):
            yield (f"fwd {dtype} gated {name}", norm_fwd_kernel, dtype, FWD_POINTERS, dict(fwd, **tile),
                   16 if tile["BLOCK_N"] == 16384 else 4)
        bwd = dict(gated, HAS_DRESIDUAL=False, X_HAT_DTYPE=FLOAT_TYPES[dtype], U_DTYPE=u_dtype, SPLIT=1)
        for recompute in (False, True):
            for name, tile in (("whole", dict(BLOCK_M=16, BLOCK_N=128, ONE_TILE=True)),
                               ("prefetch", dict(BLOCK_M=2, BLOCK_N=4096, ONE_TILE=True, PREFETCH=True)),
                               ("staged", dict(BLOCK_M=16, BLOCK_N=128, ONE_TILE=True, ASYNC_STAGES=3)),
                               ("columns", dict(BLOCK_M=2, BLOCK_N=4096, ONE_TILE=False)),
                               ("row of 16384", dict(BLOCK_M=1, BLOCK_N=16384, ONE_TILE=True))):  # GATED_ROW_BACKWARD
                yield (f"bwd {dtype} gated {name} recompute={recompute}", norm_bwd_kernel, dtype, BWD_POINTERS,
                       dict(bwd, RECOMPUTE_STATS=recompute, **tile),
                       {128: 4, 4096: 8, 16384: 16}[tile["BLOCK_N"]])
    yield ("fwd bf16 x fp32 gate gated whole", norm_fwd_kernel, "bf16", dict(FWD_POINTERS, GATE="*fp32"),
           dict(gated, BLOCK_M=4, BLOCK_N=1024, ONE_TILE=True, HAS_RESIDUAL=False, STORE_RESIDUAL_OUT=False,
                STORE_STATS=False, X_HAT_DTYPE=tl.float32, U_DTYPE=tl.float32), 4)
    yield ("bwd bf16 x fp32 gate gated prefetch", norm_bwd_kernel, "bf16", dict(BWD_POINTERS, GATE="*fp32",
                                                                                  DGATE="*fp32"),
           dict(gated, BLOCK_M=2, BLOCK_N=1024, ONE_TILE=True, HAS_DRESIDUAL=True, RECOMPUTE_STATS=False,
                X_HAT_DTYPE=tl.float32, U_DTYPE=tl.float32, SPLIT=1, PREFETCH=True), 4)
    f64 = {k: v.replace("fp32", "fp64") for k, v in BWD_POINTERS.items()}
    yield ("bwd fp64 gated whole", norm_bwd_kernel, "fp64", f64,
           dict(gated, BLOCK_M=4, BLOCK_N=256, ONE_TILE=True, HAS_DRESIDUAL=False, RECOMPUTE_STATS=True,
                COMPUTE_DTYPE=tl.float64, X_HAT_DTYPE=tl.float64, U_DTYPE=tl.float64, SPLIT=1), 4)
    yield ("fwd fp64 gated columns", norm_fwd_kernel, "fp64", {k: v.replace("fp32", "fp64") for k, v in
                                                                 FWD_POINTERS.items()},
           dict(gated, BLOCK_M=1, BLOCK_N=1024, ONE_TILE=False, HAS_RESIDUAL=False, STORE_RESIDUAL_OUT=False,
                STORE_STATS=True, COMPUTE_DTYPE=tl.float64, X_HAT_DTYPE=tl.float64, U_DTYPE=tl.float64), 4)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", help="comma-separated GPUs: sm80, sm89, sm90, sm100, gfx942, gfx950 — compile "
                                          "the heuristics' picks for each (a representative subset; --full: all)")
    parser.add_argument("--full", action="store_true", help="with --targets: every distinct pick, not the subset")
    parser.add_argument("--jobs", type=whole_number("--jobs"), help="with --targets: compile in this many processes "
                                                                  "(default 1)")
    args = parser.parse_args(argv)
    if args.full and args.targets is None:
        parser.error("--full goes with --targets")
    if args.jobs and args.targets is None:
        parser.error("--jobs goes with --targets (the other checks compile in this process)")
    if args.targets is not None:
        targets = list(dict.fromkeys(t.strip() for t in args.targets.split(",") if t.strip()))
        if not targets:
            parser.error(f"--targets names at least one GPU, got {args.targets!r}")
        sys.path.insert(0, str(ROOT / "tools"))
        import compile_targets

        return compile_targets.run(targets, args.full, args.jobs or 1)
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("compile_check: unset TRITON_INTERPRET (the kernels must be JIT functions)", file=sys.stderr)
        return 2
    failures = 0
    for name, kernel, dtype, pointers, constexprs, warps in cases():
        try:
            regs, spill = compile_one(kernel, dtype, pointers, constexprs, warps)
            print(f"ok    {name}: {regs} registers, {spill} bytes spilled", flush=True)
        except Exception as e:  # report every failing combination, not just the first
            failures += 1
            print(f"FAIL  {name}: {type(e).__name__}: {str(e)[:300]}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
