"""What the launcher sleeps on between its checks: its job processes' exits and a wake-up pipe.

The launcher used to wake every 20 ms to look at everything, a few store round trips each
time. Now it blocks in one `select` until the first of:
- a local job process ends: a pidfd (Linux >= 5.3) becomes readable when its process exits,
  whether it is the launcher's child (a fresh interpreter) or the template's (a forked one);
- `wake()` is called: a drain request (its handler's one write) or anything else that
  must be handled now; or a signal with a Python handler arrives (`wake_on_signals`): the
  handler of a SIGTERM that the kernel gave another thread (the store's) runs on the main
  thread only once it is back from `select`, so the signal itself must end the wait;
- the timeout: the launcher's next due check (heartbeats, a metrics sample, a cancel hook).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Callable


class Wakeup:
    """Pidfds of the watched processes plus a self-pipe; `wait` returns whose process ended."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._pidfds: dict[int, int] = {}  # rank -> pidfd of its process
        self._gone: set[int] = set()  # ranks whose process had ended before it was watched

    def watch(self, rank: int, pid: int) -> None:
        """Wake when `pid` (rank's process) ends."""
        try:
            self._pidfds[rank] = os.pidfd_open(pid)
        except ProcessLookupError:
            self._gone.add(rank)

    def unwatch(self, rank: int) -> None:
        """Stop watching a process whose end was handled (its pidfd would stay readable)."""
        self._gone.discard(rank)
        fd = self._pidfds.pop(rank, None)
        if fd is not None:
            os.close(fd)

    def wake(self) -> None:
        """End the current (or next) `wait` now; safe in a signal handler."""
        with contextlib.suppress(BlockingIOError):  # a wake-up is pending already
            os.write(self._write, b"!")

    def wake_on_signals(self) -> Callable[[], None]:
        """Have every signal with a Python handler end the wait (from the main thread; the
        process has one such wake-up descriptor, so this takes it over); returns the undo."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)

        def undo() -> None:
            signal.set_wakeup_fd(previous)

        return undo

    def wait(self, timeout_s: float) -> set[int]:
        """Block up to `timeout_s` for an exit or a wake-up; the ranks whose process ended."""
        if self._gone:
            return set(self._gone)
        by_fd = {fd: rank for rank, fd in self._pidfds.items()}
        ready, _, _ = select.select([self._read, *by_fd], [], [], max(timeout_s, 0.0))
        if self._read in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(self._read, 4096)
        return {by_fd[fd] for fd in ready if fd in by_fd}

    def close(self) -> None:
        """Close every descriptor (once: a second call must not close a reused number)."""
        for rank in list(self._pidfds):
            self.unwatch(rank)
        if self._read >= 0:
            os.close(self._read)
            os.close(self._write)
            self._read = self._write = -1
