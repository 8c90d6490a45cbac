"""The one-message-per-shard request of the parameter-server protocol (tables.py)."""

from __future__ import annotations

import torch

from heterps_core.runtime.tables import parse_request, request


def test_a_request_carries_every_tables_ids_and_parses_back_empty_parts_included() -> None:
    parts = [torch.tensor([3, 9, 12]), torch.empty(0, dtype=torch.int64), torch.tensor([7])]
    payload = request([4, 5, 6], parts)
    assert payload.tolist() == [4, 5, 6, 3, 0, 1, 3, 9, 12, 7]
    back = parse_request(payload, 3)
    assert [t for t, _ in back] == [4, 5, 6]
    assert all(torch.equal(a, b) for (_, a), b in zip(back, parts, strict=True))
