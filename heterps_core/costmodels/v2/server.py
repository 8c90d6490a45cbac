"""The parameter server's role: what it must hold and serve, where its shards may go.

It is one more stage-like role: `shards` units of one host type, sized by the whole tables (a
shard keeps every row it owns, row g on shard g mod n, with optimiser state) and by the
rows/bytes per second it must serve; priced at the host's price. Its placement does not
depend on the assignment, so the exact optimum is the best over host types of (server cost +
the stage optimum with the host's count reduced by the shards).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heterps_core.costmodels.common import REL_TOL
from heterps_core.instance import Instance
from heterps_core.plan import ServerPlacement


@dataclass(frozen=True)
class ServerNeed:
    """What the parameter server must hold and serve per mini-batch (assignment-free)."""

    table_gb: float
    bytes_per_batch: float  # pulls + pushes of every sparse layer
    rows_per_batch: float

    @property
    def needed(self) -> bool:
        return self.table_gb > 0 or self.bytes_per_batch > 0 or self.rows_per_batch > 0


def server_need(instance: Instance) -> ServerNeed | None:
    """None when the instance has no parameter-server role (tables stay with their stage)."""
    if instance.parameter_server is None:
        return None
    layers = instance.layers
    need = ServerNeed(
        table_gb=sum(lyr.memory_gb for lyr in layers if lyr.shardable),
        bytes_per_batch=sum((lyr.sparse_pull_mb + lyr.sparse_push_mb) * 1e6 for lyr in layers),
        rows_per_batch=sum(lyr.sparse_rows for lyr in layers),
    )
    return need if need.needed else None


def place_server(
    instance: Instance, host: str, need: ServerNeed, shards: int | None = None
) -> tuple[ServerPlacement | None, str | None]:
    """The fewest shards of `host` that hold the tables and serve the target rate; with
    `shards`, exactly that many (a run's override, `heterps run --ps-shards --reevaluate`),
    or why they do not."""
    res = instance.resource(host)
    assert instance.parameter_server is not None
    row_s = instance.parameter_server.row_s.get(host, 0.0)
    # One shard serving every row and byte of a mini-batch; n shards split both evenly
    # (rows are spread by g mod n). Pulls are counted even for stages that will not make
    # them (a one-unit stage keeps its own rows current): the server is sized for any plan.
    one_shard_s = need.bytes_per_batch / res.bandwidth_bytes_per_s + need.rows_per_batch * row_s
    limit = res.memory_gb * (1 + REL_TOL)
    k_mem = max(1, math.ceil(need.table_gb / res.memory_gb)) if need.table_gb else 1
    while k_mem > 1 and need.table_gb / (k_mem - 1) <= limit:
        k_mem -= 1
    while need.table_gb / k_mem > limit:
        k_mem += 1
    target = instance.throughput_target * (1 - REL_TOL)
    k_rate = 1
    if one_shard_s > 0:
        k_rate = max(1, math.ceil(instance.throughput_target * one_shard_s / instance.batch_size))
        while k_rate > 1 and (k_rate - 1) * instance.batch_size / one_shard_s >= target:
            k_rate -= 1
        while k_rate * instance.batch_size / one_shard_s < target:
            k_rate += 1
    if shards is not None:
        why = _fixed_shards_problem(instance, host, need, shards, k_mem, k_rate)
        if why:
            return None, why
    shards = shards if shards is not None else max(k_mem, k_rate)
    if shards > res.count:
        why = "to hold the tables" if k_mem >= k_rate else "to serve the target's rows"
        return None, f"the parameter server needs {shards} units of {host} {why}, {res.count} exist"
    time_s = one_shard_s / shards
    rate = math.inf if time_s == 0 else instance.batch_size / time_s
    return (
        ServerPlacement(
            resource=host,
            shards=shards,
            time_per_batch_s=time_s,
            throughput=rate,
            cost_per_hour=shards * res.price_per_hour,
            memory_gb=need.table_gb / shards,
        ),
        None,
    )


def _fixed_shards_problem(
    instance: Instance, host: str, need: ServerNeed, shards: int, k_mem: int, k_rate: int
) -> str | None:
    """Why exactly `shards` shards of `host` cannot serve the plan, or None."""
    res = instance.resource(host)
    if shards < 1:
        return f"the parameter server needs at least 1 shard, got {shards}"
    if shards > res.count:
        return f"{shards} shards of {host} asked for, {res.count} units exist"
    if shards < k_mem:
        return (f"{shards} shard(s) of {host} cannot hold the tables: {need.table_gb:g} GB "
                f"needs {k_mem} of {res.memory_gb:g} GB")
    if shards < k_rate:
        return (f"{shards} shard(s) of {host} cannot serve "
                f"{instance.throughput_target:g} samples/s: that needs {k_rate}")
    return None


def server_row_wait_s(instance: Instance, server: ServerPlacement | None) -> float:
    """Seconds a stage waits per sparse row it pulls and pushes, with the shards `server`
    places: the host's `row_s` over the shards (rows are spread g mod n)."""
    if server is None or instance.parameter_server is None:
        return 0.0
    return instance.parameter_server.row_s.get(server.resource, 0.0) / server.shards



@dataclass(frozen=True)
class Choice:
    """One placement of the parameter server (or none) and the unit counts it leaves."""

    server: ServerPlacement | None
    counts: dict[str, int]


@dataclass(frozen=True)
class Shards:
    """A server fixed by its user: exactly `count` shards on `resource`."""

    resource: str
    count: int


def server_choices(
    instance: Instance, fixed: Shards | None = None
) -> tuple[list[Choice], list[str]]:
    """Every placement that fits (or the one without a server), and why the others do not;
    with `fixed`, only that one."""
    counts = {r.name: r.count for r in instance.resources}
    need = server_need(instance)
    if need is None:
        return [Choice(None, counts)], []
    assert instance.parameter_server is not None
    choices, reasons = [], []
    hosts = instance.parameter_server.hosts if fixed is None else (fixed.resource,)
    for host in hosts:
        placement, why = place_server(instance, host, need,
                                      fixed.count if fixed is not None else None)
        if placement is None:
            reasons.append(why or f"no parameter server fits on {host}")
            continue
        left = dict(counts)
        left[host] -= placement.shards
        choices.append(Choice(placement, left))
    return choices, reasons
