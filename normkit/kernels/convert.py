"""Upcasts shared by the forward and backward families.

A bf16 value is the top half of its float32, so bf16 → float32 is a shift. Triton converts each
element on its own: the high element of a 32-bit register pair is first moved into a register of its
own (a PRMT), then shifted — two instructions where one does (tools/ptx_stats.py --sass: 16 of the 541
a thread spent a row block in LayerNorm's bf16 1 × 2048 backward split part, and again where the row
is read a second time). `upcast` with BF16_PAIRS takes the register whole: the low element shifted up,
the high one masked.

Where the launchers ask for it (A/Bs on an H200): the forward's split parts and column tiles
(LayerNorm bf16 8192×32768 318.0 → 306.4 µs, 2048×131072 326.1 → 315.8; its whole rows spilled with
it) and the backward's whole rows (−0.6 to −0.8 %). Not the backward's split parts: there the pairs
lost 0.5-1.3 % (RMSNorm 2048×131072 431.9 → 437.5) though their loop shrank 423 → 414 instructions.
config.takes_pairs says where the launchers ask for it; every thread must hold an even count (config.holds_pairs).
The conversion is inline PTX (ptx.pairs_to_float32): the launchers ask for it only where PTX is allowed
(`_runtime.inline_ptx`).
"""

import triton
import triton.language as tl

from .ptx import pairs_to_float32


@triton.jit
def upcast(t, COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr):
    """t in COMPUTE_DTYPE — bitwise `t.to(COMPUTE_DTYPE)`. With BF16_PAIRS (NVIDIA GPUs only: inline PTX) a
    bf16 tile goes to float32 a 32-bit register of two elements at a time, one instruction each."""
    if BF16_PAIRS and (COMPUTE_DTYPE == tl.float32 and t.dtype == tl.bfloat16):  # (a constexpr left of each `and`: Triton 3.3)
        return pairs_to_float32(t, True)
    return t.to(COMPUTE_DTYPE)


@triton.jit
def upcast_held(t, COMPUTE_DTYPE: tl.constexpr, PAIRS: tl.constexpr):
    """`upcast` of values held in registers across a loop (the split forward's HOLD_WEIGHT): with PAIRS (GPU
    only, where `upcast` takes BF16_PAIRS) a 2-byte tile goes to float32 a register's pair at a time by an
    asm that is not pure, so the compiler keeps the conversion at its use inside the loop; a pure one it
    hoists out of the loop, holding the float32 values — twice the registers (ptxas, sm_90: LayerNorm bf16
    1 × 8192 on 4 warps 253 registers, 404 B spilled at 128). bf16 is a shift and a mask (as `upcast`);
    fp16 two cvt.f32.f16 of the register's halves. Bitwise `t.to(COMPUTE_DTYPE)`."""
    if PAIRS and (COMPUTE_DTYPE == tl.float32 and 16 == t.dtype.primitive_bitwidth):  # bf16, fp16 (constant first: 3.3)
        return pairs_to_float32(t, False)
    return t.to(COMPUTE_DTYPE)
