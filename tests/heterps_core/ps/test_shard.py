"""When a shard applies pushes and answers pulls, in both sync modes."""

from __future__ import annotations

import torch

from heterps_core.ps import RowInit, create
from heterps_core.ps.shard import Shard, TableSpec

INIT = RowInit("normal", 0.01, seed=4)


def _spec(replicas: int) -> TableSpec:
    return TableSpec(dim=3, init=INIT, optimizer=create("sgd", lr=1.0), replicas=replicas)


def test_sync_applies_a_round_once_every_writer_pushed_it_averaged() -> None:
    shard = Shard([_spec(replicas=2)], synchronous=True)
    ids = torch.tensor([5, 9])
    start = shard.pull(0, ids)
    assert shard.ready(0, 0)
    shard.push(0, 0, torch.tensor([5]), torch.full((1, 3), 2.0))
    assert not shard.ready(0, 1)  # replica 1's round 0 is still missing
    assert torch.equal(shard.pull(0, ids), start)
    shard.push(0, 0, torch.tensor([5, 9]), torch.full((2, 3), 4.0))
    assert shard.ready(0, 1)
    expected = start - torch.tensor([[3.0] * 3, [2.0] * 3])  # (2 + 4) / 2 and 4 / 2
    torch.testing.assert_close(shard.pull(0, ids), expected)
    assert shard.tables[0].store.steps == 1


def test_async_applies_every_push_at_once() -> None:
    shard = Shard([_spec(replicas=2)], synchronous=False)
    ids = torch.tensor([5])
    start = shard.pull(0, ids)
    shard.push(0, 0, ids, torch.full((1, 3), 2.0))
    assert shard.ready(0, 7)
    torch.testing.assert_close(shard.pull(0, ids), start - 1.0)
    assert shard.tables[0].store.steps == 1


def test_a_resumed_shard_expects_the_round_after_its_checkpoint() -> None:
    first = Shard([_spec(replicas=1), _spec(replicas=1)], synchronous=True)
    for round_ in range(4):
        first.push(0, round_, torch.tensor([round_]), torch.ones(1, 3))
        first.push(1, round_, torch.tensor([7]), torch.ones(1, 3))
    resumed = Shard([_spec(replicas=1), _spec(replicas=1)], synchronous=True, start_step=4)
    resumed.load_state_dict(first.state_dict())
    assert resumed.ready(0, 4) and not resumed.ready(0, 5)
    assert resumed.rows() == [4, 1]
    ids = torch.arange(4)
    assert torch.equal(resumed.pull(0, ids), first.pull(0, ids))


def test_a_checkpoint_leaves_out_a_round_one_replica_already_began() -> None:
    """Sync, two writers: replica 0 is done with round 1 and pushes round 2 before replica
    1's checkpoint marker for step 4 reaches the server (seen in a web run). The saved state
    is that of step 4; the resumed run pushes round 2 again."""
    shard = Shard([_spec(replicas=2)], synchronous=True)
    for round_ in range(2):
        for writer in range(2):
            shard.push(0, round_, torch.tensor([writer]), torch.ones(1, 3))
    at_step_4 = shard.pull(0, torch.arange(2)).clone()
    shard.push(0, 2, torch.tensor([0]), torch.full((1, 3), 9.0))  # replica 0, round 2
    state = shard.state_dict(step=4)
    resumed = Shard([_spec(replicas=2)], synchronous=True, start_step=4)
    resumed.load_state_dict(state)
    assert resumed.ready(0, 2) and not resumed.ready(0, 3)
    assert torch.equal(resumed.pull(0, torch.arange(2)), at_step_4)
