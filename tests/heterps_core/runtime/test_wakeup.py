"""What the launcher blocks on (runtime/wakeup.py): real processes' exits and wake-ups."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

from heterps_core.runtime.wakeup import Wakeup


def sleeper(seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])


def test_a_wait_ends_when_a_watched_process_ends_and_names_its_rank() -> None:
    wakeup = Wakeup()
    short, long = sleeper(0.3), sleeper(30)
    try:
        wakeup.watch(4, short.pid)
        wakeup.watch(7, long.pid)
        t0 = time.monotonic()
        assert wakeup.wait(20.0) == {4}
        assert time.monotonic() - t0 < 10.0  # not the timeout
        assert short.wait(1.0) == 0
        wakeup.unwatch(4)
        long.kill()
        assert wakeup.wait(20.0) == {7}
    finally:
        long.kill()
        long.wait()
        wakeup.close()


def test_a_wait_without_news_lasts_its_timeout() -> None:
    wakeup = Wakeup()
    proc = sleeper(30)
    try:
        wakeup.watch(0, proc.pid)
        t0 = time.monotonic()
        assert wakeup.wait(0.3) == set()
        assert time.monotonic() - t0 >= 0.29
    finally:
        proc.kill()
        proc.wait()
        wakeup.close()


def test_a_process_gone_before_it_was_watched_is_reported_at_once() -> None:
    wakeup = Wakeup()
    proc = sleeper(0)
    proc.wait()  # reaped: its pid names no process now
    wakeup.watch(2, proc.pid)
    assert wakeup.wait(20.0) == {2}
    wakeup.unwatch(2)
    assert wakeup.wait(0.0) == set()
    wakeup.close()
    wakeup.close()  # a second close closes nothing (the numbers may be reused)


def test_wake_from_another_thread_or_a_signal_handler_ends_the_wait() -> None:
    wakeup = Wakeup()
    threading.Timer(0.2, wakeup.wake).start()
    t0 = time.monotonic()
    assert wakeup.wait(20.0) == set()
    assert time.monotonic() - t0 < 10.0
    # A signal the kernel gives another thread (the launcher's store threads): its Python
    # handler waits for the main thread, so the signal itself must end the wait.
    handled: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda number, _: handled.append(number))
    undo = wakeup.wake_on_signals()
    try:
        threading.Timer(0.2, signal.raise_signal, (signal.SIGUSR1,)).start()
        t0 = time.monotonic()
        assert wakeup.wait(20.0) == set()
        assert time.monotonic() - t0 < 10.0
        assert handled == [signal.SIGUSR1]  # and its handler ran on the way out
        for _ in range(10_000):
            wakeup.wake()  # a full pipe is one pending wake-up, never a blocked writer
        assert wakeup.wait(20.0) == set()
        assert wakeup.wait(0.0) == set()
    finally:
        undo()
        signal.signal(signal.SIGUSR1, previous)
        wakeup.close()
