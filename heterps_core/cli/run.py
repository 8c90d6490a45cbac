"""`heterps run PLAN.json --model NAME --steps N`: execute a plan with the runtime."""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from heterps_core.cli import register
from heterps_core.cli.base import Command
from heterps_core.errors import InstanceError
from heterps_core.limits import argument
from heterps_core.plan import Plan


@register
class RunCommand(Command):
    name = "run"
    help = "Train a zoo model as a plan says (processes, parameter server, live metrics)."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("plan", help="plan JSON file (from `heterps plan ... --json`)")
        parser.add_argument("--model", required=True, help="zoo model name (or module:Class)")
        parser.add_argument("--steps", type=argument("steps"), required=True,
                            help="mini-batches to train")
        parser.add_argument(
            "--bind",
            help="resource=target list, e.g. cpu=cpu,gpu-v100=cuda:0 "
            "(targets: cpu, cpu:THREADS, cuda:N, remote); default all cpu",
        )
        parser.add_argument("--size", default="small", help="model size (default: small)")
        parser.add_argument("--batch-size", type=argument("batch_size"),
                            help="default: the model's own")
        parser.add_argument(
            "--micro-batches", type=int,
            help="default: the plan's (cost model v2); v1 plans: 1, or 4 with several stages",
        )
        parser.add_argument(
            "--sync", help="sync mode: async or bsp; default: the plan's (v2), else bsp"
        )
        parser.add_argument(
            "--reevaluate", metavar="INSTANCE.json",
            help="allow a --sync/--micro-batches/--ps-shards the v2 plan was not priced for: "
                 "its assignment is re-priced on this instance under them and that plan runs",
        )
        parser.add_argument(
            "--optimizer",
            help="dense layers' optimiser: sgd, adagrad or adam (default: the model's own, "
            "adam for the CTR models)",
        )
        parser.add_argument(
            "--lr", type=argument("lr"), help="dense learning rate (default: 0.05 for sgd, "
            "else the optimiser's own: adam 0.001, adagrad 0.01)"
        )
        parser.add_argument(
            "--sparse-optimizer",
            help="the tables' optimiser on the parameter server, NAME[:lr=X,eps=Y] "
            "(default: the dense one with --lr)",
        )
        parser.add_argument(
            "--table-optimizer", action="append", default=[], metavar="TABLE=SETTING",
            help="one table's own optimiser, e.g. 0=adagrad:lr=0.05 (repeatable)",
        )
        parser.add_argument(
            "--evict-after", type=int,
            help="parameter server drops rows untouched for this many updates (default: never)",
        )
        parser.add_argument(
            "--cache-rows", type=int, default=0,
            help="async only: each stage replica caches up to N hot rows per table (0 = off)",
        )
        parser.add_argument(
            "--cache-staleness", type=int, default=0,
            help="steps a cached row is read after its pull before it is pulled again",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--data", default="synthetic",
            help="synthetic (the model's seeded stream) or criteo:PATH (a Criteo TSV, .gz too, "
                 "read in a loop); each first-stage replica reads only its own mini-batches",
        )
        parser.add_argument(
            "--eval-every", type=int, default=0, metavar="N",
            help="held-out logloss and AUC every N mini-batches and at the end (default: off)",
        )
        parser.add_argument(
            "--eval-samples", type=int, default=1000,
            help="held-out samples (synthetic: a fixed batch; criteo: the file's first lines, "
                 "left out of training); default 1000",
        )
        parser.add_argument(
            "--ps-shards", type=int,
            help="parameter-server processes (default: the plan's shards, else 1)",
        )
        parser.add_argument(
            "--checkpoint-dir",
            help="write checkpoints here: a path every machine reaches, or an fsspec URI "
            "(s3://bucket/run, ...); SIGTERM writes a final one before exit",
        )
        parser.add_argument("--checkpoint-every", type=int, help="steps between checkpoints")
        parser.add_argument(
            "--resume", action="store_true", help="continue from the last checkpoint"
        )
        parser.add_argument(
            "--host",
            default="127.0.0.1",
            help="coordinator address agents connect to (0.0.0.0: all interfaces)",
        )
        parser.add_argument("--port", type=int, default=0, help="coordinator port (default: free)")
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")

    def run(self, args: argparse.Namespace) -> int:
        import json

        from heterps_core.runtime import sync
        from heterps_core.runtime.binding import parse_binding
        from heterps_core.runtime.compile import RunConfig, default_micro_batches
        from heterps_core.runtime.launcher import FINAL_LOSS_STEPS, Launcher
        from heterps_core.runtime.models import resolve_model
        from heterps_core.runtime.spec import TrainSettings
        from heterps_core.runtime.throughput import run_summary

        plan = priced_plan(Plan.load(args.plan), args)
        zoo = resolve_model(args.model)
        batch_size = args.batch_size or zoo.default_batch_size
        if batch_size < 1:
            raise InstanceError("batch-size", f"must be at least 1, got {batch_size}")
        if plan.cost_model == 2:
            args.sync, args.micro_batches = plan.sync, plan.micro_batches
            if args.ps_shards is None and plan.parameter_server is not None:
                args.ps_shards = plan.parameter_server.shards
        args.sync = args.sync or "bsp"
        args.ps_shards = args.ps_shards if args.ps_shards is not None else 1
        micro = args.micro_batches or default_micro_batches(len(plan.stages))
        optimizer = args.optimizer or zoo.default_optimizer
        lr = args.lr if args.lr is not None else default_lr(optimizer)
        train = TrainSettings(
            model=args.model,
            steps=args.steps,
            batch_size=batch_size,
            seed=args.seed,
            size=args.size,
            lr=lr,
            micro_batches=micro,
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
        config = RunConfig(
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
        line = ProgressLine(sys.stderr)
        launcher = Launcher(config, sink=line)
        launcher.start()
        if any(t.startswith("remote") for t in (r.target for r in launcher.spec.ranks)):
            port = launcher.address.rpartition(":")[2]
            # Agents on other machines need a name they can resolve, not the loopback address.
            host = socket.gethostname() if args.host in ("0.0.0.0", "") else args.host
            print(f"waiting for worker agents: --coordinator {host}:{port}", file=sys.stderr)
        result = launcher.wait()
        line.close()
        loss = result.final_loss
        processes = process_rows(launcher.spec, result.process_stats)
        summary = {
            "steps": result.steps,
            "start_step": result.start_step,
            "throughput": result.throughput,
            "predicted_throughput": plan.throughput,
            "flushed_throughput": plan.flushed_throughput,
            "sync": args.sync,
            "micro_batches": micro,
            "ps_shards": args.ps_shards,
            "cost_model": plan.cost_model,
            "loss": loss,
            "cost": result.cost,
            "cost_per_hour": plan.cost_per_hour,
            "elapsed_s": result.elapsed_s,
            "binding": result.binding,
            "checkpoint_step": result.checkpoint_step,
            "data": args.data,
            "held_out": result.held_out,  # every evaluation: step, samples, logloss, auc
            "optimizer": optimizer,
            "processes": processes,  # every process's peak resident memory (a shard's rows)
        }
        # The one measured definition, stages next to the plan, the plan as it ran.
        summary.update(run_summary(result, batch_size, sync.get(args.sync).flushes))
        if args.json:
            print(json.dumps(summary, indent=2))
            return 0
        estimates = [f"plan: {plan.throughput:,.0f}"] if plan.throughput else []
        # A v2 plan's estimate already prices its sync mode; the bound is for v1 plans.
        most = sync.bound(plan, args.sync) if plan.cost_model != 2 else None
        if estimates and most:
            estimates.append(f"stages taking turns, as {args.sync} runs them: {most:,.0f}")
        predicted = f" ({'; '.join(estimates)})" if estimates else ""
        print(f"trained steps {result.start_step}..{result.steps} in {result.elapsed_s:.1f} s")
        print(f"throughput {result.throughput:,.0f} samples/s{predicted}")
        print(
            f"loss {loss:.4f} (mean of the last {min(FINAL_LOSS_STEPS, len(result.losses))} steps)"
            if loss is not None
            else "loss -"
        )
        print(f"cost ${result.cost:.6f} at ${plan.cost_per_hour or 0:.3f} per hour")
        print(memory_line(processes))
        if result.held_out:
            print(held_out_text(result.held_out[-1]) + f" ({len(result.held_out)} evaluations)")
        if result.checkpoint_step is not None:
            print(f"checkpoint at step {result.checkpoint_step} in {args.checkpoint_dir}")
        return 0


def default_lr(optimizer: str) -> float:
    """0.05 for SGD (the runtime's long-standing default), else the optimiser's own."""
    from heterps_core.ps import optim

    if optimizer == "sgd":
        return 0.05
    try:
        return optim.get(optimizer).lr
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


def process_rows(
    spec: object, stats: Mapping[int, Mapping[str, object]]
) -> list[dict[str, object]]:
    """Every process with its peak resident memory (and a server shard's rows held)."""
    from heterps_core.runtime.spec import JobSpec

    assert isinstance(spec, JobSpec)
    rows = []
    for rank in spec.ranks:
        entry: dict[str, object] = {"rank": rank.rank, "process": rank.describe()}
        entry.update(stats.get(rank.rank, {}))
        rows.append(entry)
    return rows


def memory_line(rows: list[dict[str, object]]) -> str:
    parts = []
    total = 0.0
    for row in rows:
        peak = row.get("peak_rss_bytes")
        if not isinstance(peak, int | float):
            parts.append(f"{row['process']}: not reported")
            continue
        total += peak
        held = row.get("rows_held")
        extra = f", {held:,} rows" if isinstance(held, int) else ""
        parts.append(f"{row['process']}: {peak / 1e9:.2f} GB{extra}")
    return "peak resident memory: " + "; ".join(parts) + f"; all: {total / 1e9:.2f} GB"


def held_out_text(held: dict[str, Any]) -> str:
    auc = "-" if held["auc"] is None else f"{held['auc']:.4f}"
    return (f"held-out logloss {held['logloss']:.4f} AUC {auc} "
            f"({held['samples']} samples, after step {held['step']})")


def plan_resources(plan: Plan) -> list[str]:
    names = [s.resource for s in plan.stages]
    if plan.parameter_server is not None:
        names.append(plan.parameter_server.resource)
    return list(dict.fromkeys(names))


def priced_plan(plan: Plan, args: argparse.Namespace) -> Plan:
    """The plan to run. A v2 plan was priced for one sync mode, micro-batch count and server:
    an override it was not priced for is refused unless `--reevaluate INSTANCE` re-prices
    the plan's assignment under it (and that re-priced plan runs)."""
    if plan.cost_model != 2:
        return plan
    shards = plan.parameter_server.shards if plan.parameter_server else None
    asked = {
        "--sync": (args.sync, plan.sync),
        "--micro-batches": (args.micro_batches, plan.micro_batches),
        "--ps-shards": (args.ps_shards, shards),
    }
    changed = {flag: v for flag, v in asked.items() if v[0] is not None and v[0] != v[1]}
    if not changed:
        return plan
    if not args.reevaluate:
        flag, (wanted, priced) = next(iter(changed.items()))
        raise InstanceError(
            flag, f"the plan was priced for {priced}, not {wanted}; run it as priced, or add "
            "--reevaluate INSTANCE.json to re-price it for the override",
        )
    if "--ps-shards" in changed:
        raise InstanceError(
            "--ps-shards", "the cost model sizes the server itself; re-plan instead"
        )
    from heterps_core.costmodel import evaluate
    from heterps_core.instance import Instance

    instance = Instance.load(args.reevaluate).as_v2(
        args.sync or plan.sync, args.micro_batches or plan.micro_batches
    )
    again = evaluate(instance, list(plan.assignment or ()))
    if not again.feasible:
        raise InstanceError("--reevaluate", f"re-priced, the plan is infeasible: {again.reason}")
    print(f"re-priced for {again.sync}, {again.micro_batches} micro-batches: "
          f"{again.throughput:,.0f} samples/s at ${again.cost_per_hour:.3f}/h", file=sys.stderr)
    return again


class ProgressLine:
    """One live line on a terminal; one line per sample elsewhere (logs, CI)."""

    LOG_EVERY_S = 5.0

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self._logged_at = -self.LOG_EVERY_S

    def __call__(self, sample: object) -> None:
        from heterps_core.runtime.metrics import MetricsSample

        assert isinstance(sample, MetricsSample)
        loss = "-" if sample.loss is None else f"{sample.loss:.4f}"
        busy = "/".join(f"{s.busy_fraction:.0%}" for s in sample.stages)
        text = (
            f"step {sample.step}/{sample.total_steps}  {sample.samples_per_s:,.0f} samples/s  "
            f"loss {loss}  busy {busy}  ${sample.cost:.6f}"
        )
        if sample.held_out:
            text += "  " + held_out_text(sample.held_out)
        if self.live:
            self.stream.write("\r" + text.ljust(79))
        elif sample.final or sample.elapsed_s - self._logged_at >= self.LOG_EVERY_S:
            self.stream.write(text + "\n")
            self._logged_at = sample.elapsed_s
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
