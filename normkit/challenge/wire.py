"""Messages between the grader and a solution's process: a JSON header, then raw float32 arrays.

Nothing that comes from the solution's side is unpickled (unpickling runs code): the grader reads
JSON and raw bytes, checks every size against its limits and raises `Malformed` otherwise.
"""

import json
import math
from typing import Dict, Optional, Tuple

import torch

MAX_HEADER_BYTES = 1 << 20  # error messages and tracebacks fit many times over
MAX_DIMS = 8

Tensors = Dict[str, torch.Tensor]


def printable(text) -> str:
    """Text from the solution's side, safe to print: control characters (a carriage return, a
    terminal escape that could rewrite the grader's lines) become "?"; line breaks stay."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else "?" for ch in str(text))


class Malformed(ValueError):
    """A message that does not follow the format, or is larger than the receiver allows."""


def send(conn, header: dict, tensors: Optional[Tensors] = None) -> None:
    """Send header (JSON-able) and float32 tensors (any device), each as its raw bytes."""
    tensors = tensors or {}
    meta = [{"name": name, "shape": list(tensor.shape)} for name, tensor in tensors.items()]
    conn.send_bytes(json.dumps({**header, "tensors": meta}).encode())
    for name, tensor in tensors.items():
        if tensor.dtype != torch.float32:
            raise TypeError(f"only float32 tensors travel, got {name} of {tensor.dtype}")
        array = tensor.detach().to("cpu").contiguous().numpy()
        conn.send_bytes(memoryview(array).cast("B") if array.size else b"")


def _shape(entry) -> Tuple[str, list]:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise Malformed("a tensor entry without a name")
    shape = entry.get("shape")
    if (not isinstance(shape, list) or len(shape) > MAX_DIMS
            or not all(isinstance(size, int) and not isinstance(size, bool) and size >= 0 for size in shape)):
        raise Malformed(f"tensor {entry['name'][:40]!r} has no valid shape")
    return entry["name"], shape


def receive(conn, max_elements: Optional[int] = None) -> Tuple[dict, Tensors]:
    """Read one message: (header, {name: CPU float32 tensor}), at most `max_elements` in all.

    Raises Malformed for anything out of format, EOFError when the other side has gone.
    """
    try:
        header = json.loads(conn.recv_bytes(MAX_HEADER_BYTES))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:  # (RecursionError: "[[[[…")
        raise Malformed(f"its header is not JSON ({type(error).__name__})") from None
    except OSError as error:
        if isinstance(error, (BrokenPipeError, ConnectionResetError)):
            raise EOFError(str(error)) from None
        raise Malformed(f"its header is longer than {MAX_HEADER_BYTES} bytes") from None
    if not isinstance(header, dict) or not isinstance(header.get("tensors"), list):
        raise Malformed("its header is not an object listing its tensors")
    shapes = [_shape(entry) for entry in header.pop("tensors")]
    total = sum(math.prod(shape) for _, shape in shapes)
    if max_elements is not None and total > max_elements:
        raise Malformed(f"it holds {total} elements, more than the {max_elements} expected")
    tensors = {}
    for name, shape in shapes:
        size = 4 * math.prod(shape)
        try:
            blob = conn.recv_bytes(size)
        except OSError as error:
            if isinstance(error, (BrokenPipeError, ConnectionResetError)):
                raise EOFError(str(error)) from None
            raise Malformed(f"tensor {name[:40]!r} is longer than its shape says") from None
        if len(blob) != size:
            raise Malformed(f"tensor {name[:40]!r} is shorter than its shape says")
        tensors[name] = (torch.frombuffer(bytearray(blob), dtype=torch.float32) if size
                         else torch.empty(0)).reshape(shape)
    return header, tensors
