"""Argument checks of the challenge entry points; each error names the argument.

What the challenge asks beyond normkit's own API: counts as ints, float32 only, caller-allocated
outputs. The grader uses the same checks on the command line's -M, -N and --eps.
"""

import torch

from .. import validation


def check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return value


check_eps = validation.check_eps  # a finite float >= 0, as normkit's own calls take it


def _check_float32(name: str, tensor, shapes: tuple, device=None) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.is_nested or tensor.layout is not torch.strided:  # (no data pointer to check overlaps with)
        raise TypeError(f"{name} must be a dense (strided) tensor, got "
                        f"{'a nested tensor' if tensor.is_nested else tensor.layout}")
    if tensor.dtype != torch.float32:
        raise TypeError(f"{name} must be float32, got {tensor.dtype}")
    if tuple(tensor.shape) not in shapes:
        expected = " or ".join(str(shape) for shape in shapes)
        raise ValueError(f"{name} must have shape {expected}, got {tuple(tensor.shape)}")
    if device is not None and tensor.device != device:
        raise ValueError(f"{name} must be on x's device ({device}), got {tensor.device}")


def _byte_range(tensor: torch.Tensor) -> tuple:
    last = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
    start = tensor.data_ptr()
    return start, start + (last + 1) * tensor.element_size()


def _check_output(name: str, tensor: torch.Tensor, inputs: dict) -> None:
    # The outputs are written densely after the kernel has read x and dy: an output must be
    # contiguous and must not overlap an input.
    if not tensor.is_contiguous():
        raise ValueError(f"{name} must be contiguous, got strides {tensor.stride()}")
    start, end = _byte_range(tensor)
    for input_name, other in inputs.items():
        other_start, other_end = _byte_range(other)
        if start < other_end and other_start < end:
            raise ValueError(f"{name} must not overlap {input_name} in memory")


def check_solve_args(x, weight, dy, dx, dweight, N, C, eps) -> float:
    """Every check `solve` makes, before anything is written; returns eps as a float."""
    N = check_positive_int("N", N)
    C = check_positive_int("C", C)
    eps = check_eps(eps)
    rows = ((N, C), (N * C,))
    _check_float32("x", x, rows)
    _check_float32("weight", weight, ((C,),), x.device)
    _check_float32("dy", dy, rows, x.device)
    _check_float32("dx", dx, rows, x.device)
    _check_float32("dweight", dweight, ((C,),), x.device)
    inputs = {"x": x, "weight": weight, "dy": dy}
    _check_output("dx", dx, inputs)
    _check_output("dweight", dweight, {**inputs, "dx": dx})
    return eps
