"""One end of a two-process gloo exchange for test_wire.py (run as a script, rank 0 or 1).

Prints one JSON line with what the receiving end saw.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from heterps_core.runtime.wire import Inbox, Outbox, send_tensor

TAG = 5


def in_order(rank: int, store: dist.TCPStore) -> dict[str, object]:
    """Three messages whose receives were all posted before the first was sent."""
    if rank == 0:
        store.wait(["posted"])
        outbox = Outbox()
        for i in range(3):
            send_tensor(outbox, torch.full((2, 3), float(i)), 1, TAG, "cpu")
        outbox.flush()
        return {}
    inbox = Inbox()
    for _ in range(3):
        inbox.expect(torch.Size([2, 3]), torch.float32, 0, TAG, "cpu", header=True)
    store.set("posted", "1")
    taken = [inbox.take(0, TAG) for _ in range(3)]
    return {
        "values": [t.unique().tolist() for t in taken if t is not None],
        "unposted": inbox.take(0, TAG + 1) is None,
    }


def changed_shape(rank: int, store: dist.TCPStore) -> dict[str, object]:
    """A message of the same size but another shape than the receive posted for it."""
    if rank == 0:
        outbox = Outbox()
        send_tensor(outbox, torch.zeros(3, 2), 1, TAG, "cpu")
        outbox.flush()
        return {}
    inbox = Inbox()
    inbox.expect(torch.Size([2, 3]), torch.float32, 0, TAG, "cpu", header=True)
    try:
        inbox.take(0, TAG)
    except RuntimeError as exc:
        return {"error": str(exc)}
    return {"error": None}


def settle_leaves_the_newest_sends(rank: int, store: dist.TCPStore) -> dict[str, object]:
    """`settle` returns while the receiver has not posted yet; the next one waits for it."""
    if rank == 0:
        outbox = Outbox()
        outbox.send(torch.ones(1000), 1, TAG)
        outbox.settle()  # would deadlock if it waited: the receive is posted only after this
        store.set("settled", "1")
        outbox.settle()
        return {}
    store.wait(["settled"])
    buffer = torch.zeros(1000)
    dist.recv(buffer, 0, tag=TAG)
    return {"sum": float(buffer.sum())}


SCENARIOS = {f.__name__: f for f in (in_order, changed_shape, settle_leaves_the_newest_sends)}


def main() -> None:
    scenario, rank, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, timeout=timedelta(seconds=30))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
    result = SCENARIOS[scenario](rank, store)
    # The store, not a gloo barrier: after a refused message a collective is not safe.
    store.set(f"done{rank}", "1")
    store.wait(["done0", "done1"])
    dist.destroy_process_group()
    if rank == 1:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
