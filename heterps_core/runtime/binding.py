"""Binding: which execution target each resource type of a plan runs on.

A target is the local CPU with a thread budget per unit (`cpu`, `cpu:4`), a local GPU
(`cuda:N`), or `remote`: units go to worker agents that said they provide that type.
On one machine every type may map to the local CPU.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from heterps_core.limits import limit
from heterps_core.runtime.errors import RunConfigError


@dataclass(frozen=True)
class Target:
    """Where one unit of a resource type executes."""

    kind: str  # "cpu", "cuda" or "remote"
    threads: int = 1
    index: int = 0
    remote_device: str = "cpu"  # what an agent runs `remote` units on: "cpu" or "cuda"
    # `cpu:N` written out: the user's thread count, kept. A bare `cpu` is one thread that
    # the compile step may raise from the plan's busy shares (runtime/threads.py).
    # Not compared: `cpu` and `cpu:1` name the same target.
    explicit: bool = field(default=False, compare=False)

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda" or (self.kind == "remote" and self.remote_device == "cuda")

    @property
    def is_remote(self) -> bool:
        return self.kind == "remote"

    def __str__(self) -> str:
        if self.kind == "cpu":
            return "cpu" if self.threads == 1 and not self.explicit else f"cpu:{self.threads}"
        if self.kind == "cuda":
            return f"cuda:{self.index}"
        return "remote" if self.remote_device == "cpu" else "remote:cuda"


def parse_target(text: str, where: str = "bind") -> Target:
    """`cpu`, `cpu:THREADS`, `cuda:N`, `remote` or `remote:cuda`."""
    value = text.strip()
    head, _, tail = value.partition(":")
    if head == "remote" and tail in ("", "cpu", "cuda"):
        return Target("remote", remote_device=tail or "cpu")
    if head == "cpu":
        threads = _count(tail, where, "thread budget") if tail else 1
        limit("threads").check(threads, where, RunConfigError)
        return Target("cpu", threads=threads, explicit=bool(tail))
    if head == "cuda":
        index = _count(tail, where, "GPU index", allow_zero=True) if tail else 0
        limit("gpu_index").check(index, where, RunConfigError)
        return Target("cuda", index=index)
    raise RunConfigError(
        where, f"unknown target {value!r}; use cpu, cpu:THREADS, cuda:N, remote or remote:cuda"
    )


def parse_binding(text: str | None, resources: Iterable[str]) -> dict[str, Target]:
    """`cpu=cpu,gpu-v100=cuda:0`; types not named default to the local CPU."""
    names = list(resources)
    binding = {name: Target("cpu") for name in names}
    if not text:
        return binding
    for item in text.split(","):
        if not item.strip():
            continue
        resource, sep, target = item.partition("=")
        resource = resource.strip()
        if not sep:
            raise RunConfigError("bind", f"{item.strip()!r} is not RESOURCE=TARGET")
        if resource not in binding:
            raise RunConfigError(
                f"bind.{resource}",
                f"the plan has no resource type {resource!r} ({', '.join(names)})",
            )
        binding[resource] = parse_target(target, f"bind.{resource}")
    return binding


def binding_text(binding: Mapping[str, Target]) -> str:
    return ",".join(f"{name}={target}" for name, target in binding.items())


def _count(text: str, where: str, what: str, allow_zero: bool = False) -> int:
    if not text.isdigit() or (int(text) == 0 and not allow_zero):
        raise RunConfigError(
            where,
            f"{what} must be a {'non-negative' if allow_zero else 'positive'} "
            f"whole number, got {text!r}",
        )
    return int(text)
