"""Point-to-point tensors between processes: a small header (shape, dtype), then the data.

Sends are asynchronous (`isend`) and kept in an `Outbox` until waited on, so a stage never
blocks on a slow receiver while it still has work; receives block and are timed as idle.
Messages between two ranks on one tag arrive in the order they were sent.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

HEADER_LEN = 8
MAX_DIMS = HEADER_LEN - 2

# Tags keep the streams between one pair of ranks apart.
TAG_FORWARD = 1
TAG_BACKWARD = 2
TAG_LABELS = 3
TAG_PS_REQUEST = 10
TAG_PS_PAYLOAD = 11
TAG_PS_REPLY = 12

_DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.bool,
    torch.uint8,
]
_CODES = {dtype: code for code, dtype in enumerate(_DTYPES)}


class Outbox:
    """Pending asynchronous sends; the tensors stay referenced until `flush`."""

    def __init__(self) -> None:
        self._pending: list[tuple[dist.Work, torch.Tensor]] = []

    def send(self, tensor: torch.Tensor, dst: int, tag: int) -> None:
        tensor = tensor.contiguous()
        work = dist.isend(tensor, dst, tag=tag)
        if work is not None:
            self._pending.append((work, tensor))

    def flush(self) -> None:
        for work, _ in self._pending:
            work.wait()
        self._pending.clear()


def header_of(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.dim() > MAX_DIMS:
        raise ValueError(f"tensors with more than {MAX_DIMS} dimensions cannot cross a stage")
    header = torch.zeros(HEADER_LEN, dtype=torch.int64)
    header[0] = tensor.dim()
    header[1] = _CODES[tensor.dtype]
    header[2 : 2 + tensor.dim()] = torch.tensor(tensor.shape, dtype=torch.int64)
    return header


def send_tensor(outbox: Outbox, tensor: torch.Tensor, dst: int, tag: int, device: str) -> None:
    """Header on the CPU, data on `device` (the link device: cuda only between two GPUs)."""
    outbox.send(header_of(tensor), dst, tag)
    outbox.send(tensor.detach().to(device), dst, tag)


def recv_tensor(src: int, tag: int, device: str) -> torch.Tensor:
    header = torch.empty(HEADER_LEN, dtype=torch.int64)
    dist.recv(header, src, tag=tag)
    ndim = int(header[0])
    shape = [int(d) for d in header[2 : 2 + ndim]]
    tensor = torch.empty(shape, dtype=_DTYPES[int(header[1])], device=device)
    dist.recv(tensor, src, tag=tag)
    return tensor


def recv_like(
    shape: torch.Size, dtype: torch.dtype, src: int, tag: int, device: str
) -> torch.Tensor:
    """A tensor whose shape the receiver already knows (gradients of what it sent)."""
    tensor = torch.empty(shape, dtype=dtype, device=device)
    dist.recv(tensor, src, tag=tag)
    return tensor


def send_raw(outbox: Outbox, tensor: torch.Tensor, dst: int, tag: int, device: str) -> None:
    """Data only, for a receiver that knows the shape (`recv_like`)."""
    outbox.send(tensor.detach().to(device), dst, tag)
