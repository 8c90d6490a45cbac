"""Where a resource type's figures come from: the tier every figure a user sees carries.

A planning instance's compute times per resource type are measured on this host (the one
that profiled), measured by an agent on a machine of that type, measured in a run of a plan,
given with an imported model, or estimated by the roofline (within the validation's error
band, `hardware.accuracy.ESTIMATE_ERROR_BAND`). The instance carries one
`ResourceProvenance` per resource type (`resources[i].provenance`, optional); an instance
written before it existed reads as `Tier.UNKNOWN`, never as measured.

The record is built from the per-figure provenance the profiler keeps (`summarise`), so
pages and the CLI compare figures by where they came from, never by resource names. A
measured record also says on which machine (`host`, a `this_host()` identity): a run's stage
is compared like with like only when it ran on that machine and device
(`runtime.throughput.is_substitute`).
"""

from __future__ import annotations

import re
import socket
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from heterps_core.errors import InstanceError
from heterps_core.validation import check_fields, non_negative_number


class Tier(StrEnum):
    HERE = "measured-here"  # measured on the host that profiled
    AGENT = "measured-agent"  # measured by an agent on a machine of the type
    RUN = "measured-run"  # measured in a run of a plan on the type (re-plan)
    GIVEN = "given"  # timings supplied with an imported model
    ESTIMATED = "estimated"  # roofline estimate, within the validation's band
    UNKNOWN = "unknown"  # nothing recorded (instances written before tiers)


WORDS = {
    Tier.HERE: "measured on this host",
    Tier.AGENT: "measured by an agent of its type",
    Tier.RUN: "measured in a run",
    Tier.GIVEN: "given with the model",
    Tier.ESTIMATED: "estimated",
    Tier.UNKNOWN: "not recorded (an instance from before provenance)",
}
SHORT = {
    Tier.HERE: "measured here",
    Tier.AGENT: "measured (agent)",
    Tier.RUN: "measured (run)",
    Tier.GIVEN: "given",
    Tier.ESTIMATED: "estimated",
    Tier.UNKNOWN: "unknown",
}
# How much a tier's figures can be trusted, for "the weakest figure of a type".
_RANK = {Tier.HERE: 0, Tier.AGENT: 0, Tier.RUN: 0, Tier.GIVEN: 1, Tier.ESTIMATED: 2,
         Tier.UNKNOWN: 3}
_FIELDS = {"tier": True, "device": False, "at": False, "band": False, "counts": False,
           "host": False}
MEASURED = frozenset({Tier.HERE, Tier.AGENT, Tier.RUN})
# Where a machine keeps its identity (systemd, then D-Bus); read once per process.
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")
_HOST: list[str] = []


def this_host() -> str:
    """This machine's identity, as measured figures and job processes record it:
    `HOSTNAME#MACHINE-ID` (the first 12 characters of /etc/machine-id, else
    /var/lib/dbus/machine-id), or the host name alone where neither exists. Stable across
    processes and reboots; the machine id tells apart two machines given one host name, the
    host name two containers started from one image (which share its machine id)."""
    if not _HOST:
        name = socket.gethostname()
        for path in MACHINE_ID_FILES:
            try:
                with open(path, encoding="ascii") as f:
                    machine = f.read().strip()
            except (OSError, UnicodeDecodeError):
                continue
            if machine:
                name = f"{name}#{machine[:12]}"
                break
        _HOST.append(name)
    return _HOST[0]


# A device label's device class: 'cpu (4 threads, ...)', 'cuda:0 (NVIDIA ...)', or an
# agent's 'HOST: cpu (...)'; a host name such as 'cpu-node1' is not taken for one.
_DEVICE = re.compile(r"(?:^|: )(cpu|cuda)(?=[\s:(,]|$)")


def device_class(label: str) -> str:
    """'cpu' or 'cuda' for what a measured record's device label names ('' for neither)."""
    found = _DEVICE.findall(label.lower())
    return found[-1] if found else ""


def estimate_band() -> float:
    """The validation's current error band for estimated figures (a fraction)."""
    # Imported here: heterps_core.hardware imports the instance module, which imports this.
    from heterps_core.hardware.accuracy import ESTIMATE_ERROR_BAND

    return ESTIMATE_ERROR_BAND


@dataclass(frozen=True)
class ResourceProvenance:
    """One resource type's figures: their (weakest) tier, what they were measured on or
    estimated for, when, the error band of estimated figures, and per-tier counts when its
    figures mix tiers (a re-plan corrects only the layers that ran)."""

    tier: Tier
    device: str = ""
    at: str = ""
    band: float | None = None
    counts: tuple[tuple[str, int], ...] = ()  # hashable, like every Resource field
    # The machine its figures were measured on (`this_host()`; "": not recorded, or its
    # figures were measured on several machines or not measured at all).
    host: str = ""

    @property
    def measured(self) -> bool:
        return self.tier in MEASURED and not self.counts

    @property
    def measured_on(self) -> tuple[str, str] | None:
        """(host, device class) every figure of the type was measured on; None when that is
        not known (estimated, given, mixed with either, or measured without a host)."""
        tiers = {Tier(t) for t, _ in self.counts} or {self.tier}
        device = device_class(self.device)
        if not tiers <= MEASURED or not self.host or not device:
            return None
        return self.host, device

    @property
    def short(self) -> str:
        """A table cell: 'measured here', 'estimated ±25%', 'mixed'."""
        if self.counts:
            return "mixed"
        return SHORT[self.tier] + (self._band_text() if self.tier == Tier.ESTIMATED else "")

    def label(self) -> str:
        """A sentence part: 'estimated ±25% (roofline for gpu-t4)'."""
        if self.counts:
            parts = [f"{n} {WORDS[Tier(t)]}" + (self._band_text() if t == Tier.ESTIMATED else "")
                     for t, n in sorted(self.counts, key=lambda c: _RANK[Tier(c[0])])]
            return "mixed: " + ", ".join(parts)
        where = f" ({self.device})" if self.device else ""
        band = self._band_text() if self.tier == Tier.ESTIMATED else ""
        return WORDS[self.tier] + band + where

    def _band_text(self) -> str:
        # An estimated record always carries a band: its own, else the validation's now.
        band = self.band
        if band is None and (self.tier == Tier.ESTIMATED or self.counts):
            band = estimate_band()
        return f" ±{100 * band:.0f}%" if band is not None else ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tier": self.tier.value}
        if self.device:
            data["device"] = self.device
        if self.at:
            data["at"] = self.at
        if self.band is not None:
            data["band"] = self.band
        if self.counts:
            data["counts"] = dict(self.counts)
        if self.host:
            data["host"] = self.host
        return data

    def to_json(self) -> dict[str, Any]:
        """`to_dict` with the words, for the CLI's and the API's readers."""
        return {**self.to_dict(), "label": self.label(), "measured": self.measured}

    @classmethod
    def from_dict(cls, raw: Any, where: str = "provenance") -> ResourceProvenance:
        check_fields(raw, where, _FIELDS)
        tier = _tier(raw["tier"], f"{where}.tier")
        device, at, host = raw.get("device", ""), raw.get("at", ""), raw.get("host", "")
        for name, value in (("device", device), ("at", at), ("host", host)):
            if not isinstance(value, str):
                raise InstanceError(f"{where}.{name}", "must be a string")
        band = raw.get("band")
        if band is not None:
            band = non_negative_number(band, f"{where}.band")
        counts = raw.get("counts", {})
        if not isinstance(counts, dict):
            raise InstanceError(f"{where}.counts", "must be an object of tier -> figures")
        for key, n in counts.items():
            _tier(key, f"{where}.counts.{key}")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise InstanceError(f"{where}.counts.{key}", f"must be a positive integer, "
                                                             f"got {n!r}")
        return cls(tier, device, at, band, tuple(sorted(counts.items())), host)

    @classmethod
    def from_json(cls, raw: Any, where: str = "provenance") -> ResourceProvenance:
        """A record as `to_json` wrote it (a plan's `--json`): its words are dropped."""
        if isinstance(raw, dict):
            raw = {k: v for k, v in raw.items() if k not in ("label", "measured")}
        return cls.from_dict(raw, where)


UNKNOWN = ResourceProvenance(Tier.UNKNOWN)


def _tier(value: Any, where: str) -> Tier:
    try:
        return Tier(value)
    except ValueError:
        known = ", ".join(t.value for t in Tier)
        raise InstanceError(where, f"must be one of {known}, got {value!r}") from None


def figure_tier(figure: Mapping[str, Any]) -> Tier:
    """The tier of one per-figure provenance entry (the profiler's `Figure.to_dict()`, or a
    stored one from before tiers: then measured without a tier says nothing about where)."""
    if "tier" in figure:
        return _tier(figure["tier"], "tier")
    source = figure.get("source")
    if source == "estimated":
        return Tier.ESTIMATED
    if source == "given":
        return Tier.GIVEN
    if source == "measured" and "job" in figure:  # webapp.jobs.replan's corrections
        return Tier.RUN
    return Tier.UNKNOWN


def summarise(figures: Iterable[Mapping[str, Any]]) -> dict[str, ResourceProvenance]:
    """Per resource type, the record of its figures (weakest tier first)."""
    by_resource: dict[str, list[tuple[Tier, Mapping[str, Any]]]] = {}
    for figure in figures:
        by_resource.setdefault(str(figure.get("resource")), []).append(
            (figure_tier(figure), figure))
    records = {}
    for resource, tagged in by_resource.items():
        counts = Counter(tier.value for tier, _ in tagged)
        tier, first = max(tagged, key=lambda t: _RANK[t[0]])
        device = str(first.get("device") or "")
        if tier == Tier.ESTIMATED and device == resource:
            device = f"roofline for {resource}"
        at = max(str(f.get("at") or "") for _, f in tagged)
        band = estimate_band() if Tier.ESTIMATED.value in counts else None
        # One machine only when every figure names the same one.
        hosts = {str(f.get("host") or "") for _, f in tagged}
        host = hosts.pop() if len(hosts) == 1 else ""
        records[resource] = ResourceProvenance(
            tier, device, at, band, tuple(sorted(counts.items())) if len(counts) > 1 else (),
            host)
    return records


# What the functions below read of an instance and a plan. Structural types, because the
# instance module imports this one (a resource carries its record): naming `Instance` here
# would close an import cycle.


class _Typed(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def provenance(self) -> ResourceProvenance | None: ...


class _OnType(Protocol):
    @property
    def resource(self) -> str: ...


class _PlanLike(Protocol):
    @property
    def stages(self) -> Sequence[_OnType]: ...
    @property
    def parameter_server(self) -> _OnType | None: ...


_I = TypeVar("_I", bound="_InstanceLike")


class _InstanceLike(Protocol):
    @property
    def resources(self) -> Sequence[_Typed]: ...
    def replace(self: _I, **changes: Any) -> _I: ...


def of_instance(instance: _InstanceLike) -> dict[str, ResourceProvenance]:
    """Every resource type's record; `UNKNOWN` where the instance carries none."""
    return {r.name: r.provenance or UNKNOWN for r in instance.resources}


def of_plan(instance: _InstanceLike, plan: _PlanLike) -> dict[str, ResourceProvenance]:
    """The records of the types a plan uses (its stages, then its parameter server)."""
    records = of_instance(instance)
    used = [s.resource for s in plan.stages]
    if plan.parameter_server is not None:
        used.append(plan.parameter_server.resource)
    return {name: records[name] for name in dict.fromkeys(used) if name in records}


def stamp(instance: _I, records: Mapping[str, ResourceProvenance]) -> _I:
    """The instance with each named resource type's record replaced (others kept)."""
    resources: tuple[Any, ...] = tuple(instance.resources)
    return instance.replace(resources=tuple(
        replace(r, provenance=records[r.name]) if r.name in records else r for r in resources))


def to_json(records: Mapping[str, ResourceProvenance]) -> dict[str, dict[str, Any]]:
    return {name: record.to_json() for name, record in records.items()}


def from_plan_json(data: Mapping[str, Any]) -> dict[str, ResourceProvenance]:
    """The records a plan's JSON carries (`heterps plan --json`: its `provenance`); empty
    for a plan without them."""
    raw = data.get("provenance")
    if not isinstance(raw, dict):
        return {}
    return {str(name): ResourceProvenance.from_json(record, f"provenance.{name}")
            for name, record in raw.items()}
