"""`wait_until`: the one way tests wait for something another thread or process does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout_s: float, what: str = "the condition",
               every_s: float = 0.05) -> T:
    """Poll `condition` until it returns something truthy, and return that; fail the test
    naming `what` once `timeout_s` has passed without it."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(every_s)
