"""`heterps --server URL --token T COMMAND`: the same tool, talking to a HeterPS server's
REST API instead of computing locally (client.py: standard library only, the core must not
depend on Django or an HTTP package).

Remote commands are a registry of small classes like the local ones; adding one is a
`RemoteCommand` subclass with `@register`. The token can also come from HETERPS_TOKEN.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, ClassVar

from heterps_core.cli.client import Client, RemoteError
from heterps_core.errors import HeterPSError
from heterps_core.limits import argument
from heterps_core.registry import Registry


class RemoteCommand:
    name: ClassVar[str]
    help: ClassVar[str]

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Declare the command's arguments."""

    def run(self, client: Client, args: argparse.Namespace) -> Any:
        """Call the server; return JSON-ready data (printed as a table or with --json)."""
        raise NotImplementedError

    def text(self, data: Any) -> str:
        return json.dumps(data, indent=2)


# A registry of classes, in registration order (the order `--help` lists them in).
REMOTE: Registry[type[RemoteCommand]] = Registry("remote command", ordered=True)


def register(command: type[RemoteCommand]) -> type[RemoteCommand]:
    return REMOTE.register(command)


def wants_server(argv: Sequence[str]) -> bool:
    """True when --server comes before the command (the global option)."""
    for arg in argv:
        if arg == "--server" or arg.startswith("--server="):
            return True
        if not arg.startswith("-"):
            return False
    return False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="heterps --server URL",
        description="Work with a HeterPS server: its projects, jobs and costs.",
    )
    parser.add_argument("--server", required=True, help="the server's URL, e.g. https://heterps")
    parser.add_argument("--token", default=os.environ.get("HETERPS_TOKEN"),
                        help="personal API token (default: $HETERPS_TOKEN)")
    parser.add_argument("--json", action="store_true", help="print the server's JSON")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in REMOTE:
        sub = subparsers.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(sub)
        sub.set_defaults(_remote=command)
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    command = args._remote()
    try:
        if not args.token:
            raise RemoteError("--token: missing (or set HETERPS_TOKEN); get one from "
                              "POST /api/token/ or your administrator")
        data = command.run(Client(args.server, args.token), args)
    except HeterPSError as exc:
        print(f"heterps {args.command}: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(data, indent=2) if args.json else command.text(data))
    return 0


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> str:
    if not rows:
        return "(none)"
    cells = [[h for _, h in columns]] + [[_cell(r.get(k)) for k, _ in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in cells)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _results(data: Any) -> list[dict[str, Any]]:
    return data["results"] if isinstance(data, dict) and "results" in data else data


JOB_COLUMNS = [("id", "id"), ("name", "name"), ("project", "project"), ("status", "status"),
               ("last_step", "step"), ("steps", "steps"),
               ("last_throughput", "samples/s (measured: first to last mini-batch)"),
               ("predicted_throughput", "samples/s (plan)"),
               ("predicted_cost_per_hour", "$/hour (estimate)"),
               ("accrued_cost", "$ total (accrued)")]


@register
class Projects(RemoteCommand):
    name = "projects"
    help = "List the projects you belong to."

    def run(self, client: Client, args: argparse.Namespace) -> Any:
        return _results(client.get("projects/"))

    def text(self, data: Any) -> str:
        return _table(data, [("id", "id"), ("name", "name"), ("role", "role")])


@register
class Jobs(RemoteCommand):
    name = "jobs"
    help = "List jobs (newest first)."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--project", type=int, help="only this project's jobs")

    def run(self, client: Client, args: argparse.Namespace) -> Any:
        return _results(client.get("jobs/", project=args.project))

    def text(self, data: Any) -> str:
        return _table(data, JOB_COLUMNS)


class _OneJob(RemoteCommand):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("job", type=int, help="job id")

    def text(self, data: Any) -> str:
        return _table([data], JOB_COLUMNS)


@register
class Job(_OneJob):
    name = "job"
    help = "Show one job: state, measured and predicted throughput, cost."

    def run(self, client: Client, args: argparse.Namespace) -> Any:
        return client.get(f"jobs/{args.job}/")


@register
class Cancel(_OneJob):
    name = "cancel"
    help = "Cancel a job's current run."

    def run(self, client: Client, args: argparse.Namespace) -> Any:
        return client.post(f"jobs/{args.job}/cancel/")


@register
class Restart(_OneJob):
    name = "restart"
    help = "Start a finished job again."

    def run(self, client: Client, args: argparse.Namespace) -> Any:
        return client.post(f"jobs/{args.job}/restart/")


@register
class Approve(RemoteCommand):
    name = "approve"
    help = "Approve a planning result: the server starts a job running it."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("plan_result", type=int, help="planning result id")
        parser.add_argument("--steps", type=argument("steps"), required=True,
                            help="mini-batches to train")
        parser.add_argument("--sync", default="bsp", help="sync mode (default: bsp)")
        parser.add_argument("--bind", help="resource=target list, e.g. gpu-v100=cuda:0")

    def run(self, client: Client, args: argparse.Namespace) -> Any:
        body: dict[str, Any] = {"plan_result": args.plan_result, "steps": args.steps,
                                "sync_mode": args.sync}
        if args.bind:
            body["binding"] = _binding(args.bind)
        return client.post("jobs/", body)

    def text(self, data: Any) -> str:
        return _table([data], JOB_COLUMNS)


@register
class Costs(RemoteCommand):
    name = "costs"
    help = "Cost report for a month: estimate next to accrued, per job."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--month", help="YYYY-MM (default: this month)")
        parser.add_argument("--project", type=int)

    def run(self, client: Client, args: argparse.Namespace) -> Any:
        return client.get("costs/", month=args.month, project=args.project)

    def text(self, data: Any) -> str:
        rows = _table(data["jobs"], [("project", "project"), ("job_id", "job"), ("job", "name"),
                                     ("runs", "runs"), ("estimate", "$ total (estimate)"),
                                     ("accrued", "$ total (accrued)")])
        return (f"{data['period']['start'][:10]} to {data['period']['end'][:10]} (exclusive): "
                f"${data['estimate_usd_total']:.4f} estimate, "
                f"${data['accrued_usd_total']:.4f} accrued\n{rows}")


def _binding(text: str) -> dict[str, str]:
    binding = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        resource, sep, target = item.partition("=")
        if not sep:
            raise RemoteError(f"--bind: {item!r} is not RESOURCE=TARGET")
        binding[resource.strip()] = target.strip()
    return binding
