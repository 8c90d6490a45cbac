"""Which hardware kind (roofline specs) stands behind a project's resource type.

A resource type in the catalogue app has a price, count, memory and network, but no FLOP/s
or memory bandwidth; estimates need those. We take them from heterps_core's default
catalogue entry the type names (exactly, or as `gpu-<name>` / a prefix), else the first entry
of the same kind, and keep the project's own price, count, memory, network and, when the
type sets one, precision (issue 21; blank: the entry's own).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from heterps_core.hardware import Catalogue, ResourceKind, default_catalogue
from heterps_core.hardware.catalogue import effective_precision
from heterps_core.instance import Instance

if TYPE_CHECKING:  # the model's `precision_label` asks this module: no import back
    from webapp.catalogue.models import ResourceType


def hardware_for(resource_type: ResourceType) -> ResourceKind:
    base = _closest(resource_type.name.lower(), resource_type.kind.lower())
    return replace(
        base,
        name=resource_type.name,
        kind=base.kind,
        price_per_hour=resource_type.price_per_hour,
        count=resource_type.count,
        memory_gb=resource_type.memory_gb,
        network_gbps=resource_type.network_gbps,
        precision=resource_type.precision or base.precision,
        source=f"specs of {base.name}; price, count, memory and network from the project",
    )


def precision_of(resource_type: ResourceType) -> str:
    """The precision a GPU type's estimates use ('' for other kinds)."""
    kind = hardware_for(resource_type)
    return effective_precision(kind) if kind.kind == "gpu" else ""


def basis_of(resource_type: ResourceType) -> str:
    """The default-catalogue entry whose specs estimate this resource type."""
    return _closest(resource_type.name.lower(), resource_type.kind.lower()).name


def catalogue_for(resource_types: list[ResourceType]) -> Catalogue:
    return Catalogue(tuple(hardware_for(r) for r in resource_types))


def with_markets(instance: Instance, resource_types: list[ResourceType]) -> Instance:
    """`instance` with each resource's spot offer from its type (the hardware catalogue the
    instance was built from has prices and specs, not markets), so plans price spot."""
    markets = {r.name: r.market for r in resource_types}
    resources = tuple(replace(r, market=markets.get(r.name, r.market))
                      for r in instance.resources)
    return instance.replace(resources=resources)


def _closest(name: str, kind: str) -> ResourceKind:
    kinds = default_catalogue().kinds
    for candidate in kinds:
        if candidate.name == name or candidate.name == f"{kind}-{name}":
            return candidate
    for candidate in kinds:
        bare = candidate.name.split("-", 1)[-1]
        if name.startswith(bare) or bare.startswith(name.split("-")[0]):
            return candidate
    same_kind = [c for c in kinds if c.kind == kind] or [c for c in kinds if c.kind == "cpu"]
    return same_kind[0]
