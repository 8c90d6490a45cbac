"""Fixtures of the worker fault and shutdown tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The fault tests import their helpers by file name (workers load fault_kind the same way).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_helpers import OwnRedis


@pytest.fixture
def redis(tmp_path: Path, live_processes: Any) -> Iterator[OwnRedis]:
    """A redis-server of the test's own on a spare port (its outages are the test's)."""
    own = OwnRedis(tmp_path)
    yield own
    own.kill()
    assert live_processes(f"redis-server 127.0.0.1:{own.port}") == []
