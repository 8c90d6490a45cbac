"""The planning instance of the spec (§1): resources, a layer chain and the throughput target.

`Instance.from_dict` is the only way in from untrusted JSON; it rejects bad input with an
`InstanceError` naming the field, so nothing downstream has to re-check.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heterps_core.errors import InstanceError
from heterps_core.limits import check as bounded
from heterps_core.provenance import ResourceProvenance
from heterps_core.validation import (
    check_fields,
    non_empty_string,
    non_negative_number,
    positive_number,
)

SCHEMA_VERSION = 1
SCHEMA_VERSION_2 = 2  # v2: sparse traffic, a parameter-server role, sync mode (docs/cost-model.md)
SYNC_MODES = ("async", "bsp")
SPARSE_LAYER_KINDS = frozenset({"embedding", "sparse"})

_INSTANCE_FIELDS = {
    "version": True,
    "name": False,
    "batch_size": True,
    "throughput_target": True,
    "samples": False,
    "input_mb": False,
    "resources": True,
    "layers": True,
}
_INSTANCE_FIELDS_V2 = {
    **_INSTANCE_FIELDS,
    "sync": False,
    "micro_batches": False,
    "parameter_server": False,
}
_PS_FIELDS = {"hosts": True, "row_s": False}
_RESOURCE_FIELDS = {
    "name": True,
    "kind": True,
    "price_per_hour": True,
    "count": True,
    "memory_gb": True,
    "network_gbps": True,
    "provenance": False,  # where its figures come from (heterps_core/provenance.py)
    "market": False,  # optional spot market (docs/cost-model.md "Spot markets")
}
_MARKET_FIELDS = {"spot_price": True, "interruptions_per_hour": True, "restart_s": True}
_LAYER_FIELDS = {
    "name": True,
    "kind": True,
    "compute_s": True,
    "output_mb": True,
    "sync_mb": True,
    "memory_gb": True,
    "shardable": True,
    "compute_spread": False,  # optional, v1 and v2: see Layer.compute_spread
}
_LAYER_FIELDS_V2 = {
    **_LAYER_FIELDS,
    "sparse_pull_mb": False,
    "sparse_push_mb": False,
    "sparse_rows": False,
}


@dataclass(frozen=True)
class ParameterServerRole:
    """v2: which resource types may host parameter-server shards, and what a row costs there.

    `row_s[r]`: seconds one unit of r spends per embedding row it serves (a pull or a push),
    beside moving the bytes; types without an entry are priced by their network only.
    """

    hosts: tuple[str, ...]
    row_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"hosts": list(self.hosts), "row_s": dict(self.row_s)}


@dataclass(frozen=True)
class SpotMarket:
    """A resource type's spot (preemptible) offer: its price, how often a unit is interrupted
    (per unit-hour) and the seconds a replacement unit takes to start and restore."""

    spot_price: float
    interruptions_per_hour: float
    restart_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"spot_price": self.spot_price,
                "interruptions_per_hour": self.interruptions_per_hour,
                "restart_s": self.restart_s}


@dataclass(frozen=True)
class Resource:
    """A resource type: `count` identical units, each with its price, memory and network."""

    name: str
    kind: str
    price_per_hour: float
    count: int
    memory_gb: float
    network_gbps: float
    # Where its compute figures come from; None in files written before tiers (unknown).
    provenance: ResourceProvenance | None = None
    # Its spot offer; None: on-demand only (every file written before markets).
    market: SpotMarket | None = None

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.network_gbps * 1e9 / 8

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "price_per_hour": self.price_per_hour,
            "count": self.count,
            "memory_gb": self.memory_gb,
            "network_gbps": self.network_gbps,
        }
        if self.provenance is not None:
            data["provenance"] = self.provenance.to_dict()
        if self.market is not None:
            data["market"] = self.market.to_dict()
        return data


@dataclass(frozen=True)
class Layer:
    """One layer of the chain; `compute_s` maps resource name to fwd+bwd seconds per batch."""

    name: str
    kind: str
    compute_s: dict[str, float]
    output_mb: float
    sync_mb: float
    memory_gb: float
    shardable: bool
    # v2: embedding rows per batch read from / written to the parameter server (MB), and
    # how many rows that is. Zero in v1 files.
    sparse_pull_mb: float = 0.0
    sparse_push_mb: float = 0.0
    sparse_rows: float = 0.0
    # Optional: per resource, how far its compute_s could be off as measured, the median's
    # relative 95% half-width (docs/cost-model.md, "Spread"); no entry: not known. The cost
    # model never reads it; `heterps_core.throughput_band` turns it into a plan's band.
    compute_spread: dict[str, float] = field(default_factory=dict)

    @property
    def is_sparse(self) -> bool:
        return self.kind in SPARSE_LAYER_KINDS

    def runs_on(self, resource: str) -> bool:
        return resource in self.compute_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "compute_s": dict(self.compute_s),
            "output_mb": self.output_mb,
            "sync_mb": self.sync_mb,
            "memory_gb": self.memory_gb,
            "shardable": self.shardable,
            **({"compute_spread": dict(self.compute_spread)} if self.compute_spread else {}),
        }

    def to_dict_v2(self) -> dict[str, Any]:
        data = self.to_dict()
        data["sparse_pull_mb"] = self.sparse_pull_mb
        data["sparse_push_mb"] = self.sparse_push_mb
        data["sparse_rows"] = self.sparse_rows
        return data


@dataclass(frozen=True)
class Instance:
    """A whole planning problem. Build it with `from_dict`/`load` to get validation."""

    batch_size: int
    throughput_target: float
    resources: tuple[Resource, ...]
    layers: tuple[Layer, ...]
    name: str = ""
    samples: float | None = None
    input_mb: float = 0.0
    # v2 only (version 1 keeps the v1 cost model, byte for byte):
    version: int = SCHEMA_VERSION
    sync: str = "async"
    micro_batches: int = 1
    parameter_server: ParameterServerRole | None = None
    _by_name: dict[str, Resource] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_name.update({r.name: r for r in self.resources})

    def resource(self, name: str) -> Resource:
        return self._by_name[name]

    @property
    def resource_names(self) -> list[str]:
        return [r.name for r in self.resources]

    @property
    def has_markets(self) -> bool:
        """Some resource has a spot offer: plans then record each stage's market."""
        return any(r.market is not None for r in self.resources)

    def on_demand(self) -> Instance:
        """This instance with every spot offer removed: what the cluster costs on demand
        (the plan page's spot saving is measured against its optimum)."""
        from dataclasses import replace as copy_with

        return self.replace(resources=tuple(copy_with(r, market=None) for r in self.resources))

    def with_target(self, throughput_target: float) -> Instance:
        return self.replace(throughput_target=throughput_target)

    def replace(self, **changes: Any) -> Instance:
        """A copy with some top-level fields changed (resources/layers as tuples)."""
        data: dict[str, Any] = {
            "batch_size": self.batch_size,
            "throughput_target": self.throughput_target,
            "resources": self.resources,
            "layers": self.layers,
            "name": self.name,
            "samples": self.samples,
            "input_mb": self.input_mb,
            "version": self.version,
            "sync": self.sync,
            "micro_batches": self.micro_batches,
            "parameter_server": self.parameter_server,
        }
        data.update(changes)
        return Instance(**data)

    def as_v2(self, sync: str | None = None, micro_batches: int | None = None) -> Instance:
        """This instance under the v2 cost model, with the sync mode / micro-batches given.

        A v1 file read as v2 has no sparse traffic and no parameter-server role (its tables
        stay with their stage, as in v1), so only the sync mode's timing changes.
        """
        if sync is not None and sync not in SYNC_MODES:
            raise InstanceError("sync", f"must be one of {', '.join(SYNC_MODES)}, got {sync!r}")
        if micro_batches is not None and micro_batches < 1:
            raise InstanceError("micro_batches", f"must be at least 1, got {micro_batches}")
        return self.replace(
            version=SCHEMA_VERSION_2,
            sync=sync or self.sync,
            micro_batches=micro_batches or self.micro_batches,
        )

    def with_resource(self, name: str, **changes: Any) -> Instance:
        """A copy in which resource `name` has some fields changed (for what-if questions)."""
        if name not in self._by_name:
            raise InstanceError("resource", f"no resource named {name!r}")
        resources = [r.to_dict() for r in self.resources]
        for r in resources:
            if r["name"] == name:
                r.update(changes)
        data = self.to_dict()
        data["resources"] = resources
        return Instance.from_dict(data)

    # --- JSON -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"version": self.version}
        if self.name:
            data["name"] = self.name
        data["batch_size"] = self.batch_size
        data["throughput_target"] = self.throughput_target
        if self.samples is not None:
            data["samples"] = self.samples
        data["input_mb"] = self.input_mb
        data["resources"] = [r.to_dict() for r in self.resources]
        if self.version != SCHEMA_VERSION_2:
            data["layers"] = [layer.to_dict() for layer in self.layers]
            return data
        data["layers"] = [layer.to_dict_v2() for layer in self.layers]
        data["sync"] = self.sync
        data["micro_batches"] = self.micro_batches
        if self.parameter_server is not None:
            data["parameter_server"] = self.parameter_server.to_dict()
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Instance:
        """Read and validate an instance file; every failure is an `InstanceError`."""
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise InstanceError(str(path), f"cannot read file ({exc.strerror})") from exc
        return cls.from_json(text)

    @classmethod
    def from_json(cls, text: str) -> Instance:
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise InstanceError(
                "", f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from exc
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> Instance:
        if not isinstance(data, dict) or "version" not in data:
            check_fields(data, "", _INSTANCE_FIELDS)  # names what is missing
        version = data["version"]
        if version not in (SCHEMA_VERSION, SCHEMA_VERSION_2) or isinstance(version, bool):
            raise InstanceError(
                "version", f"must be {SCHEMA_VERSION} or {SCHEMA_VERSION_2}, got {version!r}"
            )
        v2 = version == SCHEMA_VERSION_2
        check_fields(data, "", _INSTANCE_FIELDS_V2 if v2 else _INSTANCE_FIELDS)
        name = data.get("name", "")
        if not isinstance(name, str):
            raise InstanceError("name", "must be a string")
        batch_size = bounded("batch_size", data["batch_size"])
        target = bounded("throughput_target", data["throughput_target"])
        samples = data.get("samples")
        if samples is not None:
            samples = bounded("samples", samples)
        input_mb = non_negative_number(data.get("input_mb", 0.0), "input_mb")
        resources = _parse_resources(data["resources"])
        layers = _parse_layers(data["layers"], {r.name for r in resources}, v2)
        extra: dict[str, Any] = {}
        if v2:
            sync = data.get("sync", "async")
            if sync not in SYNC_MODES:
                raise InstanceError("sync", f"must be one of {', '.join(SYNC_MODES)}, got {sync!r}")
            extra = {
                "version": SCHEMA_VERSION_2,
                "sync": sync,
                "micro_batches": bounded("micro_batches", data.get("micro_batches", 1)),
                "parameter_server": _parse_ps(data.get("parameter_server"), resources),
            }
        return cls(
            batch_size=batch_size,
            throughput_target=target,
            resources=resources,
            layers=layers,
            name=name,
            samples=samples,
            input_mb=input_mb,
            **extra,
        )


def _parse_ps(raw: Any, resources: tuple[Resource, ...]) -> ParameterServerRole | None:
    if raw is None:
        return None
    where = "parameter_server"
    check_fields(raw, where, _PS_FIELDS)
    names = {r.name for r in resources}
    hosts = raw["hosts"]
    if not isinstance(hosts, list) or not hosts:
        raise InstanceError(f"{where}.hosts", "must be a non-empty list of resource names")
    for i, host in enumerate(hosts):
        if host not in names:
            raise InstanceError(f"{where}.hosts[{i}]", f"{host!r} names no resource")
    if len(set(hosts)) != len(hosts):
        raise InstanceError(f"{where}.hosts", "names a resource twice")
    row_s_raw = raw.get("row_s", {})
    if not isinstance(row_s_raw, dict):
        raise InstanceError(f"{where}.row_s", "must be an object of resource name -> seconds")
    row_s = {}
    for res, seconds in row_s_raw.items():
        if res not in names:
            raise InstanceError(f"{where}.row_s.{res}", "names no resource")
        row_s[res] = non_negative_number(seconds, f"{where}.row_s.{res}")
    return ParameterServerRole(tuple(hosts), row_s)


def _parse_resources(raw: Any) -> tuple[Resource, ...]:
    if not isinstance(raw, list) or not raw:
        raise InstanceError("resources", "must be a non-empty list")
    resources = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = f"resources[{i}]"
        check_fields(item, where, _RESOURCE_FIELDS)
        name = non_empty_string(item["name"], f"{where}.name")
        if name in seen:
            raise InstanceError(f"{where}.name", f"duplicate resource name {name!r}")
        seen.add(name)
        resources.append(
            Resource(
                name=name,
                kind=non_empty_string(item["kind"], f"{where}.kind"),
                price_per_hour=bounded("price_per_hour", item["price_per_hour"],
                                       f"{where}.price_per_hour"),
                count=bounded("count", item["count"], f"{where}.count"),
                memory_gb=bounded("memory_gb", item["memory_gb"], f"{where}.memory_gb"),
                network_gbps=bounded("network_gbps", item["network_gbps"],
                                     f"{where}.network_gbps"),
                provenance=(ResourceProvenance.from_dict(item["provenance"],
                                                         f"{where}.provenance")
                            if "provenance" in item else None),
                market=_parse_market(item.get("market"), f"{where}.market"),
            )
        )
    return tuple(resources)


def _parse_market(raw: Any, where: str) -> SpotMarket | None:
    if raw is None:
        return None
    check_fields(raw, where, _MARKET_FIELDS)
    return SpotMarket(
        spot_price=bounded("spot_price", raw["spot_price"], f"{where}.spot_price"),
        interruptions_per_hour=bounded("interruptions_per_hour", raw["interruptions_per_hour"],
                                       f"{where}.interruptions_per_hour"),
        restart_s=bounded("restart_s", raw["restart_s"], f"{where}.restart_s"),
    )


def _parse_layers(raw: Any, resource_names: set[str], v2: bool = False) -> tuple[Layer, ...]:
    if not isinstance(raw, list) or not raw:
        raise InstanceError("layers", "must be a non-empty list")
    layers = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = f"layers[{i}]"
        check_fields(item, where, _LAYER_FIELDS_V2 if v2 else _LAYER_FIELDS)
        name = non_empty_string(item["name"], f"{where}.name")
        if name in seen:
            raise InstanceError(f"{where}.name", f"duplicate layer name {name!r}")
        seen.add(name)
        compute = item["compute_s"]
        if not isinstance(compute, dict) or not compute:
            raise InstanceError(f"{where}.compute_s", "must be a non-empty object")
        compute_s = {}
        for res, seconds in compute.items():
            if res not in resource_names:
                raise InstanceError(f"{where}.compute_s.{res}", "names no resource")
            compute_s[res] = positive_number(seconds, f"{where}.compute_s.{res}")
        shardable = item["shardable"]
        if not isinstance(shardable, bool):
            raise InstanceError(f"{where}.shardable", "must be true or false")
        layers.append(
            Layer(
                name=name,
                kind=non_empty_string(item["kind"], f"{where}.kind"),
                compute_s=compute_s,
                output_mb=non_negative_number(item["output_mb"], f"{where}.output_mb"),
                sync_mb=non_negative_number(item["sync_mb"], f"{where}.sync_mb"),
                memory_gb=non_negative_number(item["memory_gb"], f"{where}.memory_gb"),
                shardable=shardable,
                sparse_pull_mb=non_negative_number(
                    item.get("sparse_pull_mb", 0.0), f"{where}.sparse_pull_mb"
                ),
                sparse_push_mb=non_negative_number(
                    item.get("sparse_push_mb", 0.0), f"{where}.sparse_push_mb"
                ),
                sparse_rows=non_negative_number(
                    item.get("sparse_rows", 0.0), f"{where}.sparse_rows"
                ),
                compute_spread=_parse_spread(item.get("compute_spread", {}), compute_s, where),
            )
        )
    return tuple(layers)


def _parse_spread(raw: Any, compute_s: dict[str, float], where: str) -> dict[str, float]:
    """Optional per-resource spreads of a layer's compute_s, as fractions. An entry for a
    figure the layer does not have is dropped: a copy restricted to fewer resources keeps
    its spreads valid."""
    where = f"{where}.compute_spread"
    if not isinstance(raw, dict):
        raise InstanceError(where, "must be an object of resource name -> fraction")
    return {res: non_negative_number(value, f"{where}.{res}")
            for res, value in raw.items() if res in compute_s}


def _reject_constant(name: str) -> float:
    # json.loads accepts NaN/Infinity by default; the spec says they are invalid input.
    raise InstanceError("", f"{name} is not allowed (values must be finite numbers)")
