"""Planning subcommands of the spec §6: plan, evaluate, pareto (and what-if)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TextIO

from heterps_core.cli import register
from heterps_core.cli.base import Command
from heterps_core.cli.output import (
    format_considered,
    format_explanation,
    format_frontier,
    print_plan,
)
from heterps_core.errors import HeterPSError, InstanceError
from heterps_core.instance import Instance
from heterps_core.progress import Progress, no_progress

ALL = "all"


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
            help="time budget in seconds, if it applies (exact: default 60, 'inf' for none; "
                 "when reached, the best plan found and its certified gap)",
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

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core.schedulers import create

        instance = Instance.load(args.instance)
        if args.budget_s is not None and args.budget_s <= 0:
            raise InstanceError("--budget-s", f"must be greater than 0, got {args.budget_s:g}")
        if args.pretrained and args.from_scratch:
            raise InstanceError(
                "--from-scratch", "cannot be combined with --pretrained (pick one start)"
            )
        options = {"seed": args.seed, "budget_s": args.budget_s, "pretrained": args.pretrained,
                   "policy_only": args.policy_only, "from_scratch": args.from_scratch}
        if args.scheduler == ALL:
            return _plan_all(instance, options, args.json)
        show = sys.stderr.isatty() if args.progress is None else args.progress
        report = SolverProgress(sys.stderr) if show else no_progress
        plan = create(args.scheduler, **options).plan(instance, report)
        if isinstance(report, SolverProgress):
            report.close()
        if args.explain:
            from heterps_core.explain import explain

            explanation = explain(instance, plan)
            if args.json:
                print(json.dumps({"plan": plan.to_dict(), "explanation": explanation.to_dict()},
                                 indent=2))
            else:
                print_plan(instance, plan, as_json=False)
                print(format_explanation(explanation))
            return 0
        print_plan(instance, plan, as_json=args.json)
        return 0


class SolverProgress:
    """A scheduler's progress on stderr: one live line on a terminal, else a line per phase
    and at most one every LOG_EVERY_S seconds within a phase (logs, CI)."""

    LOG_EVERY_S = 1.0

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.started = time.perf_counter()
        self._logged_at = -self.LOG_EVERY_S
        self._phase = ""

    def __call__(self, progress: Progress) -> None:
        elapsed = time.perf_counter() - self.started
        text = f"[{elapsed:6.1f} s] {progress.message}"
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
    from heterps_core.plan import Plan
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
    if as_json:
        print(json.dumps({
            "chosen": chosen.scheduler if chosen else None,
            "plans": [p.to_dict() for p in plans],
            "skipped": skipped,
        }, indent=2))
    else:
        print(format_considered(instance, plans, chosen, skipped))
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

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core.costmodel import evaluate

        instance = Instance.load(args.instance)
        assignment = [a.strip() for a in args.assignment.split(",")]
        plan = evaluate(instance, assignment)
        print_plan(instance, plan, as_json=args.json)
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

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core.frontier import default_targets, frontier, frontier_to_dict

        instance = Instance.load(args.instance)
        targets = (
            _parse_targets(args.targets)
            if args.targets
            else default_targets(instance, args.points, args.low, args.high)
        )
        points = frontier(instance, targets)
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
