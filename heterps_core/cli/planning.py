"""Planning subcommands of the spec §6: plan, evaluate, pareto (and what-if)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, TextIO

from heterps_core.budget import Stopwatch
from heterps_core.cli import register
from heterps_core.cli.base import Command
from heterps_core.cli.caps import add_cap_arguments, cost_caps
from heterps_core.cli.markets import market_lines
from heterps_core.cli.output import (
    format_considered,
    format_explanation,
    format_frontier,
    plan_json,
    print_plan,
)
from heterps_core.errors import HeterPSError, InstanceError
from heterps_core.instance import Instance
from heterps_core.limits import argument
from heterps_core.plan import Plan
from heterps_core.progress import Progress, no_progress

if TYPE_CHECKING:
    from heterps_core.heterogeneity import Heterogeneity

ALL = "all"
SYNC_CHOICES = ("async", "bsp", "auto")
TRADE_OFF = {
    "async": "async: stages without dense weights run one mini-batch ahead and sparse updates "
             "apply as they arrive (staleness up to one mini-batch): faster per hour, possibly "
             "more samples to the same loss",
    "bsp": "bsp: exact SGD (every mini-batch sees every earlier update), repeatable; stages "
           "take turns, so it needs more units for the same throughput",
}


def add_sync_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sync", choices=SYNC_CHOICES,
        help="price the plan for this runtime sync mode (cost model v2); auto: the cheaper "
             "of async and bsp that meets the target. Default: the instance's own (v1 files: "
             "the v1 model)",
    )
    parser.add_argument(
        "--micro-batches", type=int, dest="micro_batches",
        help="micro-batches per mini-batch the plan is priced for (cost model v2)",
    )
    parser.add_argument(
        "--precision", metavar="fp32|tf32|amp",
        help="train every GPU type at this precision: their estimated figures re-priced from "
             "the profile beside the instance (INSTANCE.provenance.json). Default: each "
             "type's own (tf32 on A10G/A100/H100, fp32 on V100/T4)",
    )


def sync_variants(instance: Instance, args: argparse.Namespace) -> list[Instance]:
    """The instance(s) to plan: as is, or under v2 for the sync mode(s) asked for (at the
    --precision asked for, if any)."""
    if getattr(args, "precision", None):
        from heterps_core.hardware.precision import at_precision, load_provenance

        instance, notes = at_precision(instance, load_provenance(args.instance), args.precision)
        for note in notes:
            print(f"--precision {args.precision}: {note}", file=sys.stderr)
    sync, micro = getattr(args, "sync", None), getattr(args, "micro_batches", None)
    if micro is not None and micro < 1:
        raise InstanceError("--micro-batches", f"must be at least 1, got {micro}")
    if sync is None and micro is None:
        return [instance]
    modes = ["async", "bsp"] if sync == "auto" else [sync or instance.sync]
    return [instance.as_v2(mode, micro) for mode in modes]


def pick_sync(plans: list[Plan]) -> Plan:
    """One plan per sync mode -> the better one, its choice and trade-off in the notes."""
    from heterps_core.costmodel import is_better

    if len(plans) == 1:
        return plans[0]
    chosen = plans[0]
    for plan in plans[1:]:
        if is_better(plan, chosen):
            chosen = plan
    others = [p for p in plans if p is not chosen]
    lines = [f"sync auto: chose {chosen.sync}"]
    for other in others:
        if other.feasible and other.cost_per_hour is not None:
            lines[0] += f" over {other.sync} (${other.cost_per_hour:.3f}/h)"
        else:
            lines[0] += f" over {other.sync} (infeasible: {other.reason})"
    lines.append(TRADE_OFF.get(chosen.sync or "", ""))
    return chosen.with_notes(*[line for line in lines if line])


@register
class PlanCommand(Command):
    name = "plan"
    help = "Find a plan with one scheduler, or compare them all (--scheduler all)."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("instance", help="planning instance JSON file")
        parser.add_argument(
            "--scheduler", default="exact", help="scheduler name, or 'all' (default: exact)"
        )
        parser.add_argument("--seed", type=int, default=0, help="seed for stochastic schedulers")
        parser.add_argument(
            "--budget-s", type=float, default=None,
            help="budget in CPU seconds of the solving thread, never wall time, so a busy "
                 "machine gives the same plan (exact: default 60, 'inf' for none; when "
                 "reached, the best plan found and its certified gap; rl: only a cap, "
                 "default 600, the work is --updates)",
        )
        parser.add_argument(
            "--updates", type=argument("max_updates"), default=None,
            help="rl: policy updates on this instance (default 100; with --pretrained: "
                 "fine-tune for that many, default none)",
        )
        parser.add_argument(
            "--progress", action=argparse.BooleanOptionalAction, default=None,
            help="scheduler progress on stderr (default: on a terminal only)",
        )
        parser.add_argument(
            "--pretrained", action="store_true", help="rl: plan with the shipped policy"
        )
        parser.add_argument(
            "--policy-only", action="store_true",
            help="rl: the policy's own best sampled plan (no local search, no fallback)",
        )
        parser.add_argument(
            "--from-scratch", action="store_true",
            help="rl: train from random weights on this instance (no pretrained warm start)",
        )
        parser.add_argument("--explain", action="store_true", help="why this plan, runner-ups")
        parser.add_argument("--json", action="store_true", help="print JSON")
        add_sync_arguments(parser)
        add_cap_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core.schedulers import create

        variants = sync_variants(Instance.load(args.instance), args)
        instance = variants[0]
        if args.budget_s is not None and args.budget_s <= 0:
            raise InstanceError("--budget-s", f"must be greater than 0, got {args.budget_s:g}")
        if args.pretrained and args.from_scratch:
            raise InstanceError(
                "--from-scratch", "cannot be combined with --pretrained (pick one start)"
            )
        options = {"seed": args.seed, "budget_s": args.budget_s, "pretrained": args.pretrained,
                   "policy_only": args.policy_only, "from_scratch": args.from_scratch,
                   "updates": args.updates, "caps": cost_caps(args)}
        if args.scheduler == ALL:
            if len(variants) > 1:
                raise InstanceError("--sync", "auto is not available with --scheduler all")
            return _plan_all(instance, options, args.json)
        show = sys.stderr.isatty() if args.progress is None else args.progress
        report = SolverProgress(sys.stderr) if show else no_progress
        plan = pick_sync([create(args.scheduler, **options).plan(v, report) for v in variants])
        if isinstance(report, SolverProgress):
            report.close()
        instance = next((v for v in variants if v.sync == plan.sync), instance)
        against = _heterogeneity(instance, plan)
        if args.explain:
            from heterps_core.explain import explain

            explanation = explain(instance, plan)
            if args.json:
                print(json.dumps({"plan": plan_json(instance, plan, against),
                                  "explanation": explanation.to_dict()}, indent=2))
            else:
                print_plan(instance, plan, as_json=False, heterogeneity=against)
                print_markets(plan)
                print(format_explanation(explanation))
            return 0
        print_plan(instance, plan, as_json=args.json, heterogeneity=against)
        if not args.json:
            print_markets(plan)
        return 0


def print_markets(plan: Plan) -> None:
    for line in market_lines(plan):
        print(line)


def _heterogeneity(instance: Instance, plan: Plan) -> Heterogeneity | None:
    """The plan against the best homogeneous plan (exact, same model); None if infeasible."""
    from heterps_core.heterogeneity import compare

    return compare(instance, plan) if plan.feasible else None


class SolverProgress:
    """A scheduler's progress on stderr: one live line on a terminal, else a line per phase
    and at most one every LOG_EVERY_S seconds within a phase (logs, CI). Each line shows the
    wall seconds and the CPU seconds of the solving thread (what `--budget-s` counts)."""

    LOG_EVERY_S = 1.0

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.watch = Stopwatch()
        self._logged_at = -self.LOG_EVERY_S
        self._phase = ""

    def __call__(self, progress: Progress) -> None:
        elapsed = self.watch.wall_s
        text = f"[{elapsed:6.1f} s, {self.watch.cpu_s:6.1f} CPU-s] {progress.message}"
        phase = progress.message.split(";")[0]
        if self.live:
            self.stream.write("\r" + text[:150].ljust(150))
        elif (phase != self._phase or elapsed - self._logged_at >= self.LOG_EVERY_S
              or progress.fraction >= 1):
            self.stream.write(text + "\n")
            self._logged_at, self._phase = elapsed, phase
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")


def _plan_all(instance: Instance, options: dict[str, object], as_json: bool) -> int:
    from heterps_core.costmodel import is_better
    from heterps_core.schedulers import create, get, names

    order = ["exact"] + [n for n in names() if n != "exact"]
    plans: list[Plan] = []
    skipped: dict[str, str] = {}
    for name in order:
        refusal = get(name).refusal(instance)
        if refusal:
            skipped[name] = refusal
            continue
        try:
            plans.append(create(name, **options).plan(instance))
        except HeterPSError as exc:
            skipped[name] = str(exc)
    chosen: Plan | None = None
    for plan in plans:
        if is_better(plan, chosen):
            chosen = plan
    against = _heterogeneity(instance, chosen) if chosen is not None else None
    if as_json:
        print(json.dumps({
            "chosen": chosen.scheduler if chosen else None,
            "plans": [plan_json(instance, p) for p in plans],
            "skipped": skipped,
            "heterogeneity": against.to_dict() if against is not None else None,
        }, indent=2))
    else:
        print(format_considered(instance, plans, chosen, skipped))
        if against is not None:
            print(against.summary())
    return 0


@register
class EvaluateCommand(Command):
    name = "evaluate"
    help = "Price one given assignment with the cost model."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("instance", help="planning instance JSON file")
        parser.add_argument(
            "--assignment", required=True, help="comma-separated resource name per layer"
        )
        parser.add_argument("--json", action="store_true", help="print the plan as JSON")
        add_sync_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core.costmodel import evaluate

        variants = sync_variants(Instance.load(args.instance), args)
        assignment = [a.strip() for a in args.assignment.split(",")]
        plan = pick_sync([evaluate(v, assignment) for v in variants])
        instance = next((v for v in variants if v.sync == plan.sync), variants[0])
        print_plan(instance, plan, as_json=args.json)
        if not args.json:
            print_markets(plan)
        return 0


@register
class ParetoCommand(Command):
    name = "pareto"
    help = "The exact cheapest plan for a sweep of throughput targets (cost/throughput curve)."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("instance", help="planning instance JSON file")
        parser.add_argument("--targets", help="comma-separated targets in samples/s")
        parser.add_argument("--points", type=int, default=20, help="sweep size (default 20)")
        parser.add_argument("--min", type=float, dest="low", help="lowest target (default R/4)")
        parser.add_argument("--max", type=float, dest="high", help="highest target (default 4R)")
        parser.add_argument("--json", action="store_true", help="print JSON")
        add_sync_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core.frontier import (
            default_targets,
            frontier,
            frontier_to_dict,
            mark_dominated,
        )

        variants = sync_variants(Instance.load(args.instance), args)
        instance = variants[0]
        targets = (
            _parse_targets(args.targets)
            if args.targets
            else default_targets(instance, args.points, args.low, args.high)
        )
        sweeps = [frontier(v, targets) for v in variants]
        points = mark_dominated(
            [group[0].target for group in zip(*sweeps, strict=True)],
            [pick_sync([p.plan for p in group]) for group in zip(*sweeps, strict=True)],
        )
        if args.json:
            print(json.dumps(frontier_to_dict(instance, points), indent=2))
        else:
            print(format_frontier(points))
        return 0


@register
class WhatIfCommand(Command):
    name = "what-if"
    help = "Re-plan exactly with one resource's price, count or bandwidth changed."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("instance", help="planning instance JSON file")
        parser.add_argument("--resource", required=True, help="resource to change")
        parser.add_argument("--price", type=float, help="new price per unit-hour")
        parser.add_argument("--count", type=int, help="new number of units")
        parser.add_argument("--network-gbps", type=float, help="new bandwidth in Gbit/s")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core.explain import what_if

        instance = Instance.load(args.instance)
        result = what_if(instance, args.resource, args.price, args.count, args.network_gbps)
        if args.json:
            print(json.dumps(result.to_dict(), indent=2))
        else:
            print(result.summary())
        return 0


def _parse_targets(text: str) -> list[float]:
    targets = []
    for i, item in enumerate(text.split(",")):
        try:
            targets.append(float(item))
        except ValueError:
            raise InstanceError(f"--targets[{i}]", f"not a number: {item.strip()!r}") from None
    return targets
