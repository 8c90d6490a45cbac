"""A streaming reader for Criteo-format TSV files (plain or .gz).

Each line: label, 13 integer features, 26 categorical features (hex hashes), tab-separated;
any feature may be empty. Integers become log(1 + max(x, 0)); categoricals are hashed into
each field's vocabulary, with row 0 reserved for "missing". Batches match CTR-DNN's inputs.
"""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

import torch

from heterps_core.errors import HeterPSError
from heterps_core.zoo.base import Batch

N_INT = 13
N_CAT = 26
N_COLUMNS = 1 + N_INT + N_CAT


class CriteoFormatError(HeterPSError, ValueError):
    """A line of a Criteo file that cannot be read; `where` is ``path:line``."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


def read_criteo(
    path: str | Path, batch_size: int, vocab_sizes: Sequence[int], drop_last: bool = False
) -> Iterator[Batch]:
    """Yield ({"dense": [B, 13], "sparse": [B, 26]}, labels [B]) batches, streaming the file."""
    _check_vocab(path, vocab_sizes)
    labels: list[float] = []
    dense: list[list[float]] = []
    sparse: list[list[int]] = []
    with _open(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            label, ints, cats = parse_line(line, vocab_sizes, f"{path}:{lineno}")
            labels.append(label)
            dense.append(ints)
            sparse.append(cats)
            if len(labels) == batch_size:
                yield _batch(labels, dense, sparse)
                labels, dense, sparse = [], [], []
    if labels and not drop_last:
        yield _batch(labels, dense, sparse)


def criteo_stream(
    path: str | Path, batch_size: int, vocab_sizes: Sequence[int], start: int = 0,
    step: int = 1, skip: int = 0,
) -> Iterator[Batch]:
    """Mini-batches start, start + step, ... of the file read as an endless loop of lines.

    The data lines after the first `skip` (a held-out slice) repeat in file order; mini-batch
    m holds lines m*B .. m*B + B - 1 of that loop. A replica (start=r, step=k) parses only
    the lines of its own mini-batches, so k replicas share the parsing and their union is
    the one-replica stream.
    """
    _check_vocab(path, vocab_sizes)
    labels: list[float] = []
    dense: list[list[float]] = []
    sparse: list[list[int]] = []
    position = 0  # lines of the loop seen so far
    while True:
        before = position
        for lineno, line in _data_lines(path, skip):
            m = position // batch_size
            position += 1
            if m < start or (m - start) % step:
                continue
            label, ints, cats = parse_line(line, vocab_sizes, f"{path}:{lineno}")
            labels.append(label)
            dense.append(ints)
            sparse.append(cats)
            if len(labels) == batch_size:
                yield _batch(labels, dense, sparse)
                labels, dense, sparse = [], [], []
        if position == before:
            raise CriteoFormatError(
                str(path), f"has no training lines after the {skip} held-out lines"
            )


def criteo_held_out(path: str | Path, samples: int, vocab_sizes: Sequence[int]) -> Batch:
    """The file's first `samples` data lines as one batch (the held-out slice)."""
    _check_vocab(path, vocab_sizes)
    labels: list[float] = []
    dense: list[list[float]] = []
    sparse: list[list[int]] = []
    for lineno, line in _data_lines(path, 0):
        if len(labels) == samples:
            break
        label, ints, cats = parse_line(line, vocab_sizes, f"{path}:{lineno}")
        labels.append(label)
        dense.append(ints)
        sparse.append(cats)
    if len(labels) < samples:
        raise CriteoFormatError(
            str(path), f"has {len(labels)} data lines, fewer than the {samples} held out"
        )
    return _batch(labels, dense, sparse)


def _data_lines(path: str | Path, skip: int) -> Iterator[tuple[int, str]]:
    """(line number, line) of the non-empty lines after the first `skip` of them."""
    seen = 0
    with _open(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            seen += 1
            if seen > skip:
                yield lineno, line


def _check_vocab(path: str | Path, vocab_sizes: Sequence[int]) -> None:
    if len(vocab_sizes) != N_CAT:
        raise CriteoFormatError(
            str(path), f"needs {N_CAT} vocabulary sizes, got {len(vocab_sizes)}"
        )


def parse_line(
    line: str, vocab_sizes: Sequence[int], where: str
) -> tuple[float, list[float], list[int]]:
    columns = line.rstrip("\r\n").split("\t")
    if len(columns) != N_COLUMNS:
        raise CriteoFormatError(
            where, f"expected {N_COLUMNS} tab-separated columns, got {len(columns)}"
        )
    if columns[0] not in ("0", "1"):
        raise CriteoFormatError(where, f"label must be 0 or 1, got {columns[0]!r}")
    ints = []
    for i, text in enumerate(columns[1 : 1 + N_INT], start=1):
        try:
            value = int(text) if text else 0
        except ValueError:
            raise CriteoFormatError(where, f"I{i} must be an integer, got {text!r}") from None
        ints.append(math.log1p(max(value, 0)))
    cats = [
        hash_category(text, int(vocab))
        for text, vocab in zip(columns[1 + N_INT :], vocab_sizes, strict=True)
    ]
    return float(columns[0]), ints, cats


def hash_category(text: str, vocab: int) -> int:
    """Row of a categorical value: 0 for missing, else a stable hash into 1..vocab-1."""
    if not text:
        return 0
    try:
        value = int(text, 16)
    except ValueError:
        value = zlib.crc32(text.encode())
    return 1 + value % max(vocab - 1, 1)


def _batch(labels: list[float], dense: list[list[float]], sparse: list[list[int]]) -> Batch:
    inputs = {
        "dense": torch.tensor(dense, dtype=torch.float32),
        "sparse": torch.tensor(sparse, dtype=torch.long),
    }
    return inputs, torch.tensor(labels, dtype=torch.float32)


def _open(path: str | Path) -> TextIO:
    try:
        if str(path).endswith(".gz"):
            return gzip.open(path, "rt", encoding="utf-8")
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise CriteoFormatError(str(path), f"cannot read file ({exc.strerror})") from exc
