"""Planning subcommands of the spec §6: plan, evaluate, pareto."""

from __future__ import annotations

import argparse

from heterps_core.cli import register
from heterps_core.cli.base import Command
from heterps_core.cli.output import print_plan
from heterps_core.instance import Instance


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
