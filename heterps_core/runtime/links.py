"""A stage replica's point-to-point traffic with its peers: which backend each link takes,
receives posted ahead, sends kept until they have left, and waits counted as idle time.

The pipeline schedule (stage.py) says what goes where; this says how (wire.py below it:
header + data, tags, asynchronous sends).
"""

from __future__ import annotations

import torch

from heterps_core.runtime.binding import parse_target
from heterps_core.runtime.metrics import Clock
from heterps_core.runtime.spec import JobSpec, RankSpec
from heterps_core.runtime.wire import (
    TAG_BACKWARD,
    Inbox,
    Outbox,
    recv_tensor,
    send_raw,
    send_tensor,
)


class StageLinks:
    """The sends and receives of one rank; every wait on a peer is the clock's idle time."""

    def __init__(self, spec: JobSpec, me: RankSpec, device: torch.device, clock: Clock) -> None:
        self.spec = spec
        self.me = me
        self.device = device
        self.clock = clock
        self.outbox = Outbox()
        self.inbox = Inbox()

    def link(self, peer: int) -> str:
        # NCCL only carries tensors between two GPUs; anything touching a CPU goes by gloo.
        mine = parse_target(self.me.target).is_cuda and self.device.type == "cuda"
        theirs = parse_target(self.spec.ranks[peer].target).is_cuda
        return "cuda" if mine and theirs else "cpu"

    def send(self, tensor: torch.Tensor, dst: int, tag: int) -> None:
        send_tensor(self.outbox, tensor, dst, tag, self.link(dst))

    def send_back(self, x: object, prev: int) -> None:
        """The gradient of an input that came from `prev` (none on the first stage)."""
        if prev >= 0 and isinstance(x, torch.Tensor) and x.grad is not None:
            send_raw(self.outbox, x.grad, prev, TAG_BACKWARD, self.link(prev))

    def receive(self, stage: int, m: int, tag: int) -> torch.Tensor:
        """Mini-batch m's next tensor on `tag` from its replica of `stage`."""
        src = self.spec.replica_rank(stage, m)
        with self.clock.idle():
            x = self.inbox.take(src, tag)
            return x if x is not None else recv_tensor(src, tag, self.link(src))

    def receive_now(self, src: int, tag: int) -> torch.Tensor:
        """A tensor whose receive was not posted ahead (the held-out set's), on this device."""
        with self.clock.idle():
            return recv_tensor(src, tag, self.link(src)).to(self.device)

    def expect(self, stage: int, m: int, tag: int, like: torch.Tensor) -> None:
        """Post mini-batch m's receive of a tensor shaped `like` (batches never change shape)."""
        src = self.spec.replica_rank(stage, m)
        self.inbox.expect(like.shape, like.dtype, src, tag, self.link(src), header=True)

    def expect_gradient(self, sent: torch.Tensor, nxt: int) -> None:
        """Post the receive of the gradient of an activation just sent to `nxt`."""
        self.inbox.expect(sent.shape, sent.dtype, nxt, TAG_BACKWARD, self.link(nxt))

    def take_gradient(self, nxt: int) -> torch.Tensor:
        with self.clock.idle():
            grad = self.inbox.take(nxt, TAG_BACKWARD)
        assert grad is not None, "every activation sent posts its gradient's receive"
        return grad

    def settle(self) -> None:
        """Wait for the sends made before the previous mini-batch (wire.py: Outbox)."""
        with self.clock.idle():
            self.outbox.settle()

    def flush(self) -> None:
        with self.clock.idle():
            self.outbox.flush()
