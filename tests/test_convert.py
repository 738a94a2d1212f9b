"""kernels/convert.upcast (bf16 → float32 by register pairs: BF16_PAIRS, inline PTX) and upcast_held (bf16
and fp16, not pure, for values held across a loop) must give the bits `.to(float32)` gives, element for element — a swapped pair would still pass most value checks
of a normalisation (its sums do not depend on the order), so this test compares every element."""

import pytest
import torch
import triton
import triton.language as tl

from normkit.kernels.convert import upcast, upcast_held

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="inline PTX needs a CUDA GPU")


@triton.jit
def _upcast_kernel(X, Y, BLOCK: tl.constexpr, PAIRS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, upcast(tl.load(X + offs), tl.float32, PAIRS))


@cuda_only
@pytest.mark.parametrize("block", [2, 256, 2048, 8192])
@pytest.mark.parametrize("warps", [1, 4])
def test_bf16_pairs_upcast_is_elementwise(block, warps):
    # every bf16 bit pattern (NaNs included) once, shuffled: a swap within a pair, or a half dropped,
    # changes some element's bits
    bits = torch.randperm(1 << 16, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    x = (bits.to(torch.int32) - (1 << 15)).to(torch.int16).view(torch.bfloat16)
    for pairs in (False, True):
        y = torch.empty(x.shape, dtype=torch.float32, device="cuda")
        _upcast_kernel[(x.numel() // block,)](x, y, BLOCK=block, PAIRS=pairs, num_warps=warps)
        assert torch.equal(y.view(torch.int32), x.float().view(torch.int32)), (block, warps, pairs)


def test_pairs_only_where_every_thread_holds_two_columns():
    # N = 1's tile leaves each thread one element: Triton refuses the packed asm there, so ops must not
    # ask for BF16_PAIRS (on an H200, tests/test_ops.py's (1, 1) rows failed to compile with them)
    from normkit.config import TileConfig, holds_pairs
    assert not holds_pairs(TileConfig(1, 1, True))
    assert not holds_pairs(TileConfig(64, 128, True, num_warps=4))
    assert holds_pairs(TileConfig(1, 256, True, num_warps=4))
    assert holds_pairs(TileConfig(2, 4096, True, num_warps=32))
    assert not holds_pairs(TileConfig(2, 1024, True, num_warps=32))


def test_pairs_where_they_won():
    # H200 A/Bs: the forward's split parts and column tiles, the backward's whole rows and column tiles
    from normkit.config import TileConfig, takes_pairs
    whole, split, columns = TileConfig(2, 4096, True, 8), TileConfig(1, 2048, True, 4, split=True), \
        TileConfig(2, 2048, False, 4)
    assert [takes_pairs(c, backward=False) for c in (whole, split, columns)] == [False, True, True]
    assert [takes_pairs(c, backward=True) for c in (whole, split, columns)] == [True, False, True]
    assert not takes_pairs(TileConfig(64, 128, False, 4), backward=True)  # one element a thread: never


@triton.jit
def _upcast_held_kernel(X, Y, BLOCK: tl.constexpr, PAIRS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, upcast_held(tl.load(X + offs), tl.float32, PAIRS))


def _every_2_byte_value(dtype, device):
    bits = torch.randperm(1 << 16, generator=torch.Generator().manual_seed(1)).to(device)
    return (bits.to(torch.int32) - (1 << 15)).to(torch.int16).view(dtype)


def _assert_same_floats(y, x):
    # bit for bit but NaN payloads (the hardware's cvt and torch's may canonicalise them differently)
    nan = x.isnan()
    assert torch.equal(y.isnan(), nan)
    assert torch.equal(y[~nan].view(torch.int32), x[~nan].float().view(torch.int32))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_upcast_held_without_pairs_is_to(dtype, device):
    """Without register pairs (the interpreter, narrow tiles) upcast_held is Triton's `.to`, bit for bit (compared
    with a kernel's `.to`, not torch's: the interpreter's bf16 subnormals differ from torch's), and equals
    torch's `.float()` on every normal value."""
    x = _every_2_byte_value(dtype, device)
    y, to = (torch.empty(x.shape, dtype=torch.float32, device=device) for _ in range(2))
    _upcast_held_kernel[(x.numel() // 4096,)](x, y, BLOCK=4096, PAIRS=False)
    _upcast_kernel[(x.numel() // 4096,)](x, to, BLOCK=4096, PAIRS=False)
    assert torch.equal(y.view(torch.int32), to.view(torch.int32))
    normal = x.float().abs() >= torch.finfo(dtype).tiny
    assert torch.equal(y[normal].view(torch.int32), x[normal].float().view(torch.int32))


@cuda_only
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("block", [256, 8192])
@pytest.mark.parametrize("warps", [1, 4])
def test_upcast_held_pairs_is_elementwise(dtype, block, warps):
    x = _every_2_byte_value(dtype, "cuda")
    y = torch.empty(x.shape, dtype=torch.float32, device="cuda")
    _upcast_held_kernel[(x.numel() // block,)](x, y, BLOCK=block, PAIRS=True, num_warps=warps)
    _assert_same_floats(y, x)
