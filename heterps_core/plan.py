"""The plan of the spec (§5): an assignment, its stages, their units, and what it costs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from heterps_core.errors import InstanceError


@dataclass(frozen=True)
class Stage:
    """Consecutive layers on one resource; `units` is None when the stage cannot be provisioned."""

    layers: tuple[int, ...]
    resource: str
    units: int | None
    time_per_batch_s: float | None
    throughput: float | None
    # v2 only: the stage runs ahead of the rest (async, no dense weights), so its time does
    # not add to the stages that take turns. None in v1 plans.
    runs_ahead: bool | None = None
    # Only when the instance has spot markets (None otherwise, and left out of the JSON):
    # "spot" or "on-demand", and on spot the checkpoint interval in steps (Young/Daly).
    market: str | None = None
    checkpoint_every: int | None = None

    @property
    def first(self) -> int:
        return self.layers[0]

    @property
    def last(self) -> int:
        return self.layers[-1]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "layers": list(self.layers),
            "resource": self.resource,
            "units": self.units,
            "time_per_batch_s": _round(self.time_per_batch_s, 8),
            "throughput": _round(self.throughput, 6),
        }
        if self.runs_ahead is not None:
            data["runs_ahead"] = self.runs_ahead
        if self.market is not None:
            data["market"] = self.market
            data["checkpoint_every"] = self.checkpoint_every
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stage:
        return cls(
            layers=tuple(data["layers"]),
            resource=data["resource"],
            units=data.get("units"),
            time_per_batch_s=data.get("time_per_batch_s"),
            throughput=data.get("throughput"),
            runs_ahead=data.get("runs_ahead"),
            market=data.get("market"),
            checkpoint_every=data.get("checkpoint_every"),
        )


@dataclass(frozen=True)
class ServerPlacement:
    """v2: where the parameter-server shards run, how many, and what they cost."""

    resource: str
    shards: int
    time_per_batch_s: float  # one shard's work per mini-batch
    throughput: float  # samples/s the shards serve together
    cost_per_hour: float
    memory_gb: float  # table memory per shard

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "shards": self.shards,
            "time_per_batch_s": _round(self.time_per_batch_s, 8),
            "throughput": _round(self.throughput, 6),
            "cost_per_hour": _round(self.cost_per_hour, 9),
            "memory_gb": _round(self.memory_gb, 9),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerPlacement:
        return cls(
            resource=str(data["resource"]),
            shards=int(data["shards"]),
            time_per_batch_s=float(data["time_per_batch_s"]),
            throughput=float(data["throughput"]),
            cost_per_hour=float(data["cost_per_hour"]),
            memory_gb=float(data.get("memory_gb", 0.0)),
        )


@dataclass(frozen=True)
class Plan:
    """A scheduler's answer. Infeasible plans keep the assignment (if any) and a `reason`."""

    scheduler: str
    feasible: bool
    assignment: tuple[str, ...] | None
    stages: tuple[Stage, ...] = ()
    throughput: float | None = None
    cost_per_hour: float | None = None
    hours: float | None = None
    total_cost: float | None = None
    solve_time_s: float = 0.0
    reason: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    # v2 only (None in v1 plans, whose JSON is unchanged): what the plan was priced for.
    sync: str | None = None
    micro_batches: int | None = None
    parameter_server: ServerPlacement | None = None
    cost_model: int = 1  # 2: priced by the v2 model (sync mode, micro-batches, server)
    # Only when the instance has spot markets: interruptions expected over the whole job
    # (None without markets or without `samples`, and then left out of the JSON).
    expected_interruptions: float | None = None

    def with_scheduler(self, scheduler: str, solve_time_s: float | None = None) -> Plan:
        return replace(
            self,
            scheduler=scheduler,
            solve_time_s=self.solve_time_s if solve_time_s is None else solve_time_s,
        )

    def with_notes(self, *notes: str) -> Plan:
        return replace(self, notes=self.notes + notes)

    @property
    def flushed_throughput(self) -> float | None:
        """Samples/s when the stages take turns instead of overlapping (each stage's units
        still work in parallel): the most an exact pipeline that drains every mini-batch
        (the runtime's `bsp`) can reach. Equals `throughput` for a single stage."""
        rates = [s.throughput for s in self.stages]
        if not self.feasible or not rates or any(not r for r in rates):
            return None
        return 1.0 / sum(1.0 / r for r in rates if r)

    @property
    def cost_per_million_samples(self) -> float | None:
        if not self.feasible or not self.throughput or self.cost_per_hour is None:
            return None
        return self.cost_per_hour / (self.throughput * 3600) * 1e6

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "scheduler": self.scheduler,
            "feasible": self.feasible,
            "assignment": list(self.assignment) if self.assignment is not None else None,
            "stages": [s.to_dict() for s in self.stages],
            "throughput": _round(self.throughput, 6),
            "cost_per_hour": _round(self.cost_per_hour, 9),
            "hours": _round(self.hours, 9),
            "total_cost": _round(self.total_cost, 6),
            "solve_time_s": round(self.solve_time_s, 6),
            "reason": self.reason,
        }
        if self.notes:
            data["notes"] = list(self.notes)
        if self.expected_interruptions is not None:
            data["expected_interruptions"] = _round(self.expected_interruptions, 6)
        if self.cost_model == 2:
            data["cost_model"] = 2
            data["sync"] = self.sync
            data["micro_batches"] = self.micro_batches
            data["parameter_server"] = (
                self.parameter_server.to_dict() if self.parameter_server else None
            )
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Plan:
        if not isinstance(data, dict):
            raise InstanceError("plan", "must be a JSON object")
        try:
            assignment = data.get("assignment")
            return cls(
                scheduler=str(data.get("scheduler", "")),
                feasible=bool(data["feasible"]),
                assignment=tuple(assignment) if assignment is not None else None,
                stages=tuple(Stage.from_dict(s) for s in data.get("stages", [])),
                throughput=data.get("throughput"),
                cost_per_hour=data.get("cost_per_hour"),
                hours=data.get("hours"),
                total_cost=data.get("total_cost"),
                solve_time_s=float(data.get("solve_time_s", 0.0)),
                reason=data.get("reason"),
                notes=tuple(data.get("notes", ())),
                sync=data.get("sync"),
                micro_batches=data.get("micro_batches"),
                parameter_server=(
                    ServerPlacement.from_dict(data["parameter_server"])
                    if data.get("parameter_server")
                    else None
                ),
                cost_model=int(data.get("cost_model", 1)),
                expected_interruptions=data.get("expected_interruptions"),
            )
        except (KeyError, TypeError) as exc:
            raise InstanceError("plan", f"not a plan in the spec's format ({exc})") from exc

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except OSError as exc:
            raise InstanceError(str(path), f"cannot read file ({exc.strerror})") from exc
        except json.JSONDecodeError as exc:
            raise InstanceError(str(path), f"not valid JSON ({exc.msg})") from exc


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
