"""What `heterps run` trains, from its arguments: the plan as priced (or re-priced for an
override), the training settings with their defaults, and the run config the launcher
compiles. Imported by the command's `run` only, so `heterps --help` loads no torch; what needs
torch is imported inside the functions, so `run_checks.py` can use `priced_plan` and
`plan_resources` to refuse bad input before torch loads.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from heterps_core.errors import InstanceError
from heterps_core.plan import Plan
from heterps_core.runtime.binding import parse_binding
from heterps_core.runtime.spec import TrainSettings

if TYPE_CHECKING:
    from heterps_core.runtime.compile import RunConfig

# A v1 plan was priced by the v1 cost model: stages overlap and the slowest one sets the
# pace, which is how `async` runs (`bsp` flushes every mini-batch, so every stage and transfer
# is on its critical path: docs/runtime.md, Known limits). Run as priced unless --sync says
# otherwise; it is also the fastest shape measured (docs/benchmarks/speed.md). A v2 plan
# carries its own mode.
V1_SYNC = "async"


def run_config(args: argparse.Namespace) -> RunConfig:
    """The run the arguments ask for. A v2 plan's sync mode, micro-batches and shards are
    its own (written back into `args` for the summary), else the CLI's defaults: a v1 plan
    runs `async` (as it was priced), `--sync bsp` for the plain loop's exact losses."""
    from heterps_core.runtime.compile import RunConfig
    from heterps_core.runtime.models import resolve_model

    plan = priced_plan(Plan.load(args.plan), args)
    zoo = resolve_model(args.model)
    batch_size = args.batch_size or zoo.default_batch_size
    if batch_size < 1:
        raise InstanceError("batch-size", f"must be at least 1, got {batch_size}")
    if plan.cost_model == 2:
        args.sync, args.micro_batches = plan.sync, plan.micro_batches
        if args.ps_shards is None and plan.parameter_server is not None:
            args.ps_shards = plan.parameter_server.shards
    args.sync = args.sync or V1_SYNC
    args.ps_shards = args.ps_shards if args.ps_shards is not None else 1
    optimizer = args.optimizer or zoo.default_optimizer
    train = TrainSettings(
        model=args.model,
        steps=args.steps,
        batch_size=batch_size,
        seed=args.seed,
        size=args.size,
        lr=args.lr if args.lr is not None else default_lr(optimizer),
        micro_batches=args.micro_batches or micro_batches_for(len(plan.stages), args.sync),
        sync=args.sync,
        optimizer=optimizer,
        sparse_optimizer=args.sparse_optimizer or "",
        table_optimizers=table_settings(args.table_optimizer),
        evict_after=args.evict_after,
        cache_rows=args.cache_rows,
        cache_staleness=args.cache_staleness,
        data="" if args.data == "synthetic" else args.data,
        eval_every=args.eval_every,
        eval_samples=args.eval_samples if args.eval_every else 0,
    )
    return RunConfig(
        plan=plan,
        train=train,
        binding=parse_binding(args.bind, plan_resources(plan)),
        ps_shards=args.ps_shards,
        checkpoint_dir=args.checkpoint_dir,
        checkpoint_every=args.checkpoint_every,
        resume=args.resume,
        host=args.host,
        port=args.port,
    )


def micro_batches_for(stages: int, sync_mode: str) -> int:
    """The micro-batches a run gets when neither the plan nor `--micro-batches` says: one for
    `async`, whose embedding stage overlaps the dense one by running a mini-batch ahead
    (splitting adds messages, not overlap: docs/benchmarks/speed.md); else the runtime's
    default (compile.default_micro_batches: four to fill a flushed pipeline)."""
    from heterps_core.runtime.compile import default_micro_batches

    return 1 if sync_mode == "async" else default_micro_batches(stages)


def default_lr(optimizer: str) -> float:
    """0.05 for SGD (the runtime's long-standing default), else the optimiser's own."""
    from heterps_core.ps import optim

    if optimizer == "sgd":
        return 0.05
    try:
        return optim.get(optimizer).default_lr
    except optim.UnknownOptimizerError as exc:
        raise InstanceError("optimizer", str(exc).removeprefix("optimizer ")) from None


def table_settings(items: list[str]) -> dict[str, str]:
    """`TABLE=SETTING` flags as {table: setting}."""
    out: dict[str, str] = {}
    for item in items:
        table, sep, setting = item.partition("=")
        if not sep or not table.strip().isdigit() or not setting.strip():
            raise InstanceError("table-optimizer", f"must be TABLE=SETTING, got {item!r}")
        out[table.strip()] = setting.strip()
    return out


def plan_resources(plan: Plan) -> list[str]:
    names = [s.resource for s in plan.stages]
    if plan.parameter_server is not None:
        names.append(plan.parameter_server.resource)
    return list(dict.fromkeys(names))


def priced_plan(plan: Plan, args: argparse.Namespace) -> Plan:
    """The plan to run. A v2 plan was priced for one sync mode, micro-batch count and server:
    an override it was not priced for is refused unless `--reevaluate INSTANCE` re-prices
    the plan's assignment under it (and that re-priced plan runs). A plan that places no
    server did not price the shards: their count is the runtime's."""
    if args.ps_shards is not None and args.ps_shards < 1:
        raise InstanceError("--ps-shards", f"must be at least 1, got {args.ps_shards}")
    if plan.cost_model != 2:
        return plan
    asked = {
        "--sync": (args.sync, plan.sync),
        "--micro-batches": (args.micro_batches, plan.micro_batches),
    }
    if plan.parameter_server is not None:
        asked["--ps-shards"] = (args.ps_shards, plan.parameter_server.shards)
    changed = {flag: v for flag, v in asked.items() if v[0] is not None and v[0] != v[1]}
    if not changed:
        return plan
    if not args.reevaluate:
        flag, (wanted, priced) = next(iter(changed.items()))
        override = "the override"
        if flag == "--ps-shards":
            priced, wanted = _shards(priced), _shards(wanted)
            override = wanted
        raise InstanceError(
            flag, f"the plan was priced for {priced}, not {wanted}; run it as priced, or add "
            f"--reevaluate INSTANCE.json to re-price it for {override}",
        )
    return reevaluated(plan, args)


def reevaluated(plan: Plan, args: argparse.Namespace) -> Plan:
    """The plan's assignment priced again by the one cost model on `--reevaluate`'s
    instance, under the sync mode, micro-batches and shards asked for (a shard count given
    is kept: the run starts that many); the new prediction is printed."""
    from heterps_core.costmodels import cost_model_of
    from heterps_core.instance import Instance

    instance = Instance.load(args.reevaluate).as_v2(
        args.sync or plan.sync, args.micro_batches or plan.micro_batches
    )
    model = cost_model_of(instance, plan)
    assignment = list(plan.assignment or ())
    server = plan.parameter_server
    if server is not None and args.ps_shards is not None:
        again = model.evaluate_with_shards(assignment, server.resource, args.ps_shards)
    else:
        again = model.evaluate(assignment)
    if not again.feasible:
        raise InstanceError("--reevaluate", f"re-priced, the plan is infeasible: {again.reason}")
    shards = again.parameter_server
    where = f", {_shards(shards.shards)} on {shards.resource}" if shards else ""
    print(f"re-priced for {again.sync}, {again.micro_batches} micro-batches{where}: "
          f"{again.throughput:,.0f} samples/s at ${again.cost_per_hour:.3f}/h", file=sys.stderr)
    return again


def _shards(n: object) -> str:
    return f"{n} parameter-server shard" + ("" if n == 1 else "s")
