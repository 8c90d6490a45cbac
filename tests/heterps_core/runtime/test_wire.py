"""Point-to-point messages between two real gloo processes: posted receives and settling."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

PEER = Path(__file__).with_name("wire_peer.py")


def exchange(scenario: str) -> dict[str, object]:
    """Run both ends of `scenario`; what the receiving end (rank 1) reported."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ends = [
        subprocess.Popen(
            [sys.executable, str(PEER), scenario, str(rank), str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    outputs = []
    try:
        for end in ends:
            out, err = end.communicate(timeout=60)
            assert end.returncode == 0, err[-2000:]
            outputs.append(out)
    finally:
        for end in ends:
            end.kill()
            end.wait()
    return json.loads(outputs[1].strip().splitlines()[-1])


@pytest.mark.slow
def test_posted_receives_take_messages_in_the_order_they_were_sent() -> None:
    seen = exchange("in_order")
    assert seen == {"values": [[0.0], [1.0], [2.0]], "unposted": True}


@pytest.mark.slow
def test_a_message_of_another_shape_than_posted_is_refused() -> None:
    seen = exchange("changed_shape")
    assert seen["error"] == "rank 0 sent a tensor of another shape than the last one on tag 5"


@pytest.mark.slow
def test_settle_waits_only_for_sends_before_the_previous_settle() -> None:
    assert exchange("settle_leaves_the_newest_sends") == {"sum": 1000.0}
