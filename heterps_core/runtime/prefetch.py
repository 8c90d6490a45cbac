"""Mini-batches made ahead on a background thread, so making them is off the critical path.

`Prefetched(source, ahead)` iterates `source` on one daemon thread into a queue of at most
`ahead` items; the consumer gets them in the same order, so the stream is the same one
(determinism: batch m is still batch m). Making a synthetic or parsed batch is mostly torch
and parsing work that releases the GIL or overlaps the consumer's waits on peers.

Lifetime rules, because a job process must end cleanly whatever happens:
- The thread starts on the first `next`, never at construction or import: the template a
  job process is forked from must stay single-threaded (runtime/template.py). The first item
  is made on the caller's thread, so any lazy set-up of the source (a model's cached module,
  which reseeds torch's global generator) happens where the caller's own work does.
- An exception in the source is re-raised by the consumer's `next`, the same object (its
  message and traceback), and ends the thread.
- `close()`, or dropping the iterator, stops the thread within `_PUT_WAIT_S`; it is a daemon
  thread, so it never holds a process open either.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
_PUT_WAIT_S = 0.1  # how often a thread with a full queue checks that it is still wanted
_END = object()  # the source is exhausted


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetched(Generic[T]):
    """An iterator over `source` whose next `ahead` items are made on a background thread."""

    def __init__(self, source: Iterator[T], ahead: int, name: str = "heterps-prefetch") -> None:
        if ahead < 1:
            raise ValueError(f"ahead must be at least 1, got {ahead}")
        self._source = source
        self._queue: queue.Queue[object] = queue.Queue(maxsize=ahead)
        self._stop = threading.Event()
        self._name = name
        self._thread: threading.Thread | None = None
        self._done = False
        # Dropping the iterator without close() (a stage that broke out of its loop) still
        # stops the thread: the finaliser holds the event, not the iterator.
        weakref.finalize(self, self._stop.set)

    def __iter__(self) -> Prefetched[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        if self._thread is None:
            first = next(self._source)  # on the caller's thread (see the module's note)
            self._thread = threading.Thread(
                target=_fill, args=(self._source, self._queue, self._stop), name=self._name,
                daemon=True,
            )
            self._thread.start()
            return first
        item = self._queue.get()
        if item is _END:
            self._done = True
            raise StopIteration
        if isinstance(item, _Failed):
            self._done = True
            raise item.error
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the thread and wait for it (at most about `_PUT_WAIT_S` once it has made the
        item it is on)."""
        self._stop.set()
        self._done = True
        if self._thread is not None:
            self._thread.join()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def _fill(source: Iterator[object], out: queue.Queue[object], stop: threading.Event) -> None:
    """The thread: items of `source` into `out` until it ends, fails, or `stop` is set.
    It holds no reference to its `Prefetched`, so dropping that one finalises it."""
    try:
        for item in source:
            if not _put(out, item, stop):
                return
    except BaseException as exc:  # handed to the consumer, who raises it
        _put(out, _Failed(exc), stop)
        return
    _put(out, _END, stop)


def _put(out: queue.Queue[object], item: object, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            out.put(item, timeout=_PUT_WAIT_S)
            return True
        except queue.Full:
            continue
    return False
