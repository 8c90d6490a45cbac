"""`Registry[T]`: name -> entry, the one shape behind every extension point of the project.

The rule for `get`: it returns the registered object itself, never a new one. A registry
holds either classes (schedulers, optimisers, data-parallel sync modes, CLI commands: built
with arguments, so the caller builds them, or calls `create`) or instances (pipeline sync
modes, zoo models, work kinds, job runners: stateless, one of each is enough); never a mix.
The module that owns a registry says which in its docstring and offers `register` as a
class decorator either way.

An unknown name raises `UnknownName`, which carries the registry's noun, the name and the
known names, so the owner can answer with its own error naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from heterps_core.errors import HeterPSError

T = TypeVar("T")


class Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)
S = TypeVar("S")


class UnknownName(HeterPSError, KeyError):
    """A name that the registry of `noun`s does not hold; `known` lists the ones it does."""

    def __init__(self, noun: str, name: str, known: list[str]) -> None:
        super().__init__(f"unknown {noun} {name!r}; known: {', '.join(known)}")
        self.noun = noun
        self.name = name
        self.known = known

    def __str__(self) -> str:
        # KeyError's own str() would quote the sentence.
        return str(self.args[0])


class Registry(Generic[T]):
    """Entries of one kind by name. `names()` is sorted unless `ordered` (registration order,
    for lists whose order a person reads, such as a form's select). `load` imports the
    modules that register the built-in entries, once, before the first lookup."""

    def __init__(self, noun: str, *, ordered: bool = False,
                 load: Callable[[], object] | None = None) -> None:
        self.noun = noun
        self.ordered = ordered
        self._load = load
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        """Register `entry` under `name`; the same object again is a no-op, another refused.

        The built-ins load first, so a clash with one is caught whatever the import order."""
        self._load_builtins()
        existing = self._entries.get(name)
        if existing is not None and existing is not entry:
            raise ValueError(f"{self.noun} {name!r} registered twice")
        self._entries[name] = entry
        return entry

    def register(self: Registry[N], entry: N) -> N:
        """Register `entry` under its own `name` (usable as a class decorator)."""
        return self.add(entry.name, entry)

    def pop(self, name: str) -> T:
        """Remove and return an entry (tests that register a throwaway one clean up with it)."""
        return self._entries.pop(name)

    def get(self, name: str) -> T:
        self._load_builtins()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(self.noun, name, self.names()) from None

    def create(self: Registry[type[S]], name: str, *args: Any, **kwargs: Any) -> S:
        """`get(name)(*args, **kwargs)`, for a registry of classes."""
        return self.get(name)(*args, **kwargs)

    def names(self) -> list[str]:
        self._load_builtins()
        return list(self._entries) if self.ordered else sorted(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return [(name, self._entries[name]) for name in self.names()]

    def choices(self, label: Callable[[T], str]) -> list[tuple[str, str]]:
        """(name, label) pairs for a form's select, in `names()` order."""
        return [(name, label(entry)) for name, entry in self.items()]

    def __iter__(self) -> Iterator[T]:
        return iter([entry for _, entry in self.items()])

    def __contains__(self, name: object) -> bool:
        self._load_builtins()
        return name in self._entries

    def __len__(self) -> int:
        self._load_builtins()
        return len(self._entries)

    def _load_builtins(self) -> None:
        if self._load is None:
            return
        load, self._load = self._load, None  # before the call: loading registers, not reads
        try:
            load()
        except BaseException:
            self._load = load
            raise
