"""(profile, resource catalogue, target, samples) -> a planning instance in the spec's JSON.

Per layer and resource kind, compute_s is the measured median when the kind is the profiled
device (`measured_kind`), otherwise the roofline estimate from that measurement. Every figure
is kept with its provenance (measured or estimated, on what, when) beside the instance; the
instance itself carries each resource type's summary, its tier (`resources[i].provenance`,
heterps_core/provenance.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from heterps_core.hardware.catalogue import Catalogue
from heterps_core.hardware.roofline import estimate, estimate_operators, rates_of
from heterps_core.instance import SCHEMA_VERSION, SCHEMA_VERSION_2, Instance
from heterps_core.profiler.calibrate import utc_now
from heterps_core.profiler.chain import ProfileError
from heterps_core.profiler.local import LocalMeasure, memory_gb
from heterps_core.profiler.result import LayerProfile, ModelProfile
from heterps_core.provenance import Tier, summarise


def under_load_label(held: float) -> str:
    """Appended to the name of an instance whose figures were timed while other processes
    held more of the cores than HELD_LIMIT (the CLI stores those only with `--force`; the web
    labels them)."""
    return f" (measured under load: {held:.0%} of the cores held by others)"


@dataclass(frozen=True)
class Figure:
    """One compute_s entry and where it comes from."""

    layer: str
    resource: str
    seconds: float
    source: str  # "measured" or "estimated"
    device: str  # what it was measured on / estimated for
    at: str  # when (ISO 8601, UTC)
    detail: dict[str, Any] = field(default_factory=dict)
    # Measured here / by an agent / estimated (heterps_core/provenance.py); None: by source.
    tier: Tier | None = None
    # The machine a measured figure was timed on (provenance.this_host()); "": estimated,
    # or measured before machines were recorded.
    host: str = ""

    def to_dict(self) -> dict[str, Any]:
        tier = self.tier or (Tier.HERE if self.source == "measured" else Tier.ESTIMATED)
        data = {"layer": self.layer, "resource": self.resource, "seconds": self.seconds,
                "source": self.source, "device": self.device, "at": self.at,
                "detail": self.detail, "tier": tier.value}
        if self.host:
            data["host"] = self.host
        return data


@dataclass(frozen=True)
class BuiltInstance:
    instance: Instance
    profile: ModelProfile
    catalogue: Catalogue
    figures: tuple[Figure, ...]

    def provenance(self) -> dict[str, Any]:
        """Everything behind the instance's numbers, as JSON-ready data."""
        return {
            "instance": self.instance.name,
            "compute_s": [f.to_dict() for f in self.figures],
            "sizes": "output_mb, sync_mb, memory_gb and input_mb are computed from tensor "
                     "shapes and parameter counts of the planned configuration "
                     f"(optimizer state: {self.profile.optimizer}), not timed",
            "profile": self.profile.to_dict(),
            "catalogue": self.catalogue.to_dict(),
        }


def build_instance(
    profile: ModelProfile,
    catalogue: Catalogue,
    throughput_target: float,
    samples: float | None = None,
    measured_kind: str | None = None,
    name: str | None = None,
    local: LocalMeasure | None = None,
    local_types: int = 0,
) -> BuiltInstance:
    """The instance. A model with sparse tables gets a v2 instance: the profiler's sparse
    rows and bytes per layer and a parameter-server role (`_add_server`), so every plan of it
    places the server; one without keeps v1. With `local` (from `--include-local`)
    `local_types` resource types of this machine are added, the server's measured time per
    row on them."""
    if measured_kind is not None and measured_kind not in catalogue.names:
        raise ProfileError(
            f"--device-kind {measured_kind!r} is not in the catalogue "
            f"(known: {', '.join(catalogue.names)})"
        )
    figures: list[Figure] = [
        _figure(layer, kind.name, profile, catalogue, measured_kind)
        for layer in profile.layers
        for kind in catalogue.kinds
    ]
    by_layer: dict[str, dict[str, float]] = {}
    for fig in figures:
        by_layer.setdefault(fig.layer, {})[fig.resource] = fig.seconds
    data: dict[str, Any] = {
        "version": SCHEMA_VERSION,
        "name": name or f"{profile.model}-{profile.size}-b{profile.batch_size}",
        "batch_size": profile.batch_size,
        "throughput_target": throughput_target,
        "input_mb": profile.input_bytes / 1e6,
        "resources": [kind.to_resource().to_dict() for kind in catalogue.kinds],
        "layers": [
            {
                "name": layer.name,
                "kind": layer.kind,
                "compute_s": by_layer[layer.name],
                "output_mb": layer.activation_bytes / 1e6,
                "sync_mb": layer.sync_bytes / 1e6,
                "memory_gb": layer.memory_bytes / 1e9,
                "shardable": layer.shardable,
            }
            for layer in profile.layers
        ],
    }
    if samples is not None:
        data["samples"] = samples
    local_names = _add_local(data, profile, local, local_types, figures) if local else []
    if any(layer.sparse_bytes for layer in profile.layers):
        _add_server(data, profile, local, local_names)
    _add_spreads(data, figures)
    uses = [u for u in (profile.cpu_use, local.cpu_use if local else None) if u is not None]
    if any(u.under_load for u in uses):
        data["name"] += under_load_label(max(u.held for u in uses))
    records = summarise(f.to_dict() for f in figures)  # each type's tier, in the instance
    for resource in data["resources"]:
        resource["provenance"] = records[resource["name"]].to_dict()
    return BuiltInstance(Instance.from_dict(data), profile, catalogue, tuple(figures))


def _add_spreads(data: dict[str, Any], figures: list[Figure]) -> None:
    """Each layer's optional compute_spread: the median's spread of the measurement behind
    each figure (an estimate scaled from a measurement inherits it; an estimate from
    operator counts alone has none, its error is the validation's band)."""
    layers = {item["name"]: item for item in data["layers"]}
    for fig in figures:
        spread = fig.detail.get("median_spread")
        if spread is not None:
            layers[fig.layer].setdefault("compute_spread", {})[fig.resource] = spread


def _add_local(
    data: dict[str, Any], profile: ModelProfile, local: LocalMeasure, n: int,
    figures: list[Figure],
) -> list[str]:
    """The local types measured as the runtime runs a stage (v2); their names."""
    data["version"] = SCHEMA_VERSION_2
    local_resources = local.resources(n, memory_gb())
    data["resources"] += local_resources
    spreads = local.spreads or (None,) * len(profile.layers)
    for layer, item, seconds, spread in zip(profile.layers, data["layers"], local.seconds,
                                            spreads, strict=True):
        for res in local_resources:
            item["compute_s"][res["name"]] = seconds
            figures.append(Figure(
                layer.name, res["name"], seconds, "measured",
                f"cpu ({local.threads} threads, this machine)", local.measured_at,
                {"threads": local.threads, "what": "forward + backward + the dense optimiser's "
                 "step, first layer incl. producing the batch, sparse layers through the "
                 "remote-table path (the shard's part apart), median of the batches timed",
                 "median_spread": spread, "repeats": local.repeats,
                 "network_spread": local.network_spread, "row_s_spread": local.row_s_spread,
                 "cpu_use": local.cpu_use.to_dict() if local.cpu_use else None},
                host=local.host,
            ))
    return [res["name"] for res in local_resources]


def _add_server(
    data: dict[str, Any], profile: ModelProfile, local: LocalMeasure | None,
    local_names: list[str],
) -> None:
    """v2: each layer's rows pulled from and pushed to the parameter server per batch, and
    the server's role. Shards are CPU processes: every CPU type may host them (a catalogue
    without one: every type, its machines' CPUs running them). Their time per row is known
    only where a shard was timed (the local types); other hosts are priced by their network."""
    data["version"] = SCHEMA_VERSION_2
    measured_rows = local.rows if local is not None and local.rows else None
    for i, (layer, item) in enumerate(zip(profile.layers, data["layers"], strict=True)):
        # The profiler counts each touched row twice: pulled once, pushed back once.
        item["sparse_pull_mb"] = layer.sparse_bytes / 2 / 1e6
        item["sparse_push_mb"] = layer.sparse_bytes / 2 / 1e6
        item["sparse_rows"] = measured_rows[i] if measured_rows else layer.sparse_rows
    cpus = [r["name"] for r in data["resources"] if r["kind"] == "cpu"]
    data["parameter_server"] = {
        "hosts": cpus or [r["name"] for r in data["resources"]],
        "row_s": {name: local.row_s for name in local_names}
        if local is not None and local.row_s else {},
    }


def _figure(
    layer: LayerProfile, resource: str, profile: ModelProfile, catalogue: Catalogue,
    measured_kind: str | None,
) -> Figure:
    if resource == measured_kind:
        return Figure(layer.name, resource, layer.time.median_s, "measured",
                      profile.device.label, profile.measured_at, layer.time.to_dict(),
                      host=profile.device.host)
    kind = catalogue.get(resource)
    if kind.kind == "gpu" and layer.ops.classes is not None:
        # A GPU from operator counts alone (operator-roofline-v2): nothing of the CPU run's
        # own inefficiency is carried over.
        gpu = estimate_operators(layer.ops, kind)
        return Figure(layer.name, resource, gpu.seconds, "estimated", resource, utc_now(),
                      gpu.to_dict())
    est = estimate(layer.time.median_s, layer.ops, profile.reference, rates_of(kind))
    detail = est.to_dict()
    detail["reference_measured_at"] = profile.measured_at
    detail["median_spread"] = layer.time.median_spread  # scaled from it, it moves with it
    return Figure(layer.name, resource, est.seconds, "estimated", resource, utc_now(), detail)
