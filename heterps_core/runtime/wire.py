"""Point-to-point tensors between processes: a small header (shape, dtype), then the data.

Sends are asynchronous (`isend`) and kept in an `Outbox` until waited on, so a stage never
blocks on a slow receiver while it still has work; receives block and are timed as idle.
Messages between two ranks on one tag arrive in the order they were sent.

Gloo moves a message only once its receive is posted: a receive posted late pays the whole
transfer (0.7 ms for a 1 MB activation on loopback here), one posted early (`Inbox`) finds
the data already there.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import torch
import torch.distributed as dist

HEADER_LEN = 8
MAX_DIMS = HEADER_LEN - 2

# Tags keep the streams between one pair of ranks apart.
TAG_FORWARD = 1
TAG_BACKWARD = 2
TAG_LABELS = 3
TAG_EVAL = 4  # the held-out set, forward only
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
    """Pending asynchronous sends; the tensors stay referenced until waited on."""

    def __init__(self) -> None:
        self._pending: deque[tuple[int, dist.Work, torch.Tensor]] = deque()
        self._generation = 0

    def send(self, tensor: torch.Tensor, dst: int, tag: int) -> None:
        tensor = tensor.contiguous()
        work = dist.isend(tensor, dst, tag=tag)
        if work is not None:
            self._pending.append((self._generation, work, tensor))

    def flush(self) -> None:
        """Wait for every send."""
        while self._pending:
            self._pending.popleft()[1].wait()

    def settle(self) -> None:
        """Wait for the sends made before the previous `settle`, then start a new generation.

        Called once per mini-batch: the sends of the mini-batch just done go on in the
        background (waiting for them would put a whole transfer on the critical path), while
        the buffers held stay bounded.
        """
        while self._pending and self._pending[0][0] < self._generation:
            self._pending.popleft()[1].wait()
        self._generation += 1


@dataclass
class _Posted:
    header: tuple[dist.Work, torch.Tensor] | None
    data: tuple[dist.Work, torch.Tensor]


class Inbox:
    """Receives posted ahead of the messages they expect, taken in the order they were posted.

    Every receive of one (source, tag) stream must go through the same inbox once one is
    posted there: gloo matches receives to messages in posting order.
    """

    def __init__(self) -> None:
        self._posted: dict[tuple[int, int], deque[_Posted]] = {}

    def expect(
        self, shape: torch.Size, dtype: torch.dtype, src: int, tag: int, device: str,
        header: bool = False,
    ) -> None:
        """Post the receive of a tensor of this shape (after its header, for `send_tensor`)."""
        head = None
        if header:
            buffer = torch.empty(HEADER_LEN, dtype=torch.int64)
            head = (_irecv(buffer, src, tag), buffer)
        data = torch.empty(shape, dtype=dtype, device=device)
        posted = _Posted(head, (_irecv(data, src, tag), data))
        self._posted.setdefault((src, tag), deque()).append(posted)

    def take(self, src: int, tag: int) -> torch.Tensor | None:
        """The oldest posted receive of this stream once it has arrived; None if none is posted."""
        queue = self._posted.get((src, tag))
        if not queue:
            return None
        posted = queue.popleft()
        work, data = posted.data
        if posted.header is not None:
            posted.header[0].wait()
            if not _matches(posted.header[1], data):
                raise RuntimeError(
                    f"rank {src} sent a tensor of another shape than the last one on tag {tag}"
                )
        work.wait()
        return data


def _irecv(tensor: torch.Tensor, src: int, tag: int) -> dist.Work:
    work = dist.irecv(tensor, src, tag=tag)
    assert work is not None  # only None for ranks outside the group
    return work


def _matches(header: torch.Tensor, tensor: torch.Tensor) -> bool:
    return bool(torch.equal(header, header_of(tensor)))


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


def send_raw(outbox: Outbox, tensor: torch.Tensor, dst: int, tag: int, device: str) -> None:
    """Data only, for a receiver that knows the shape (a receive posted with `Inbox.expect`)."""
    outbox.send(tensor.detach().to(device), dst, tag)
