"""Sealing checkpoints through the rendezvous store: each rank reports every part it has
written (its size and content hash, and the attempt), and the launcher seals a step once
every rank of this attempt reported it (`checkpoint.seal_step`).

The store lives as long as one launch, so the reports are this attempt's by construction;
each carries the attempt id as well, and the launcher takes none of another. A step folder
that only an earlier attempt wrote to, or one a rank of this attempt did not finish, never
gets a manifest from this run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from heterps_core import rendezvous as keys
from heterps_core.runtime import checkpoint
from heterps_core.runtime.metrics import StoreLike as Store
from heterps_core.runtime.parts import Root, Written


class PartReports:
    """Worker side: tells the launcher about each part this rank wrote."""

    def __init__(self, store: Store, rank: int, attempt: str) -> None:
        self.store = store
        self.rank = rank
        self.attempt = attempt
        # Continue the rank's sequence if this store has one (reports are never overwritten).
        count = keys.part_reports(rank)
        self._seq = int(store.get(count)) if store.check([count]) else 0

    def report(self, step: int, written: Written) -> None:
        report = {"step": step, "size": written.size, "hash": written.digest,
                  "attempt": self.attempt}
        # The report before its count: the launcher never reads a count ahead of it.
        self.store.set(keys.part_report(self.rank, self._seq), json.dumps(report))
        self._seq += 1
        self.store.set(keys.part_reports(self.rank), str(self._seq))


class Sealer:
    """Launcher side: collects the reports and seals each step all ranks reported."""

    def __init__(self, store: Store, root: Root | None, attempt: str,
                 ranks: Iterable[int]) -> None:
        self.store = store
        self.root = root
        self.attempt = attempt
        self._seen = {rank: 0 for rank in ranks}
        self._written: dict[int, dict[int, Written]] = {}  # step -> rank -> its part
        self.refused: dict[int, str] = {}  # step -> why it was not sealed
        self.sealed: list[int] = []  # every step this attempt sealed, in order (pruned too)

    def poll(self) -> list[int]:
        """Read the new reports; seal the steps now reported by every rank (returned)."""
        if self.root is None:
            return []
        for rank in self._seen:
            self._read(rank)
        sealed = []
        for step in sorted(self._written):
            if len(self._written[step]) < len(self._seen):
                continue
            why = checkpoint.seal_step(self.root, step, self.attempt, self._written.pop(step))
            if why is None:
                sealed.append(step)
                self.sealed.append(step)
            else:
                self.refused[step] = why
        return sealed

    def _read(self, rank: int) -> None:
        count_key = keys.part_reports(rank)
        if not self.store.check([count_key]):
            return
        count = int(self.store.get(count_key))
        while self._seen[rank] < count:
            key = keys.part_report(rank, self._seen[rank])
            report = json.loads(self.store.get(key))
            self.store.delete_key(key)
            self._seen[rank] += 1
            if report["attempt"] == self.attempt:
                written = Written(int(report["size"]), str(report["hash"]))
                self._written.setdefault(int(report["step"]), {})[rank] = written
