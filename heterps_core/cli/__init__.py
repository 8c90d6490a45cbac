"""The `heterps` command line: one small `Command` class per subcommand, one registry (of
classes, in registration order: the order `heterps --help` lists them in).

Command modules keep heavy imports (torch, scipy) inside `run`, so `heterps --help` and the
planning commands start fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from heterps_core.cli import remote
from heterps_core.cli.base import Command
from heterps_core.errors import HeterPSError
from heterps_core.registry import Registry
from heterps_core.runtime.errors import RunPreempted

COMMANDS: Registry[type[Command]] = Registry("command", ordered=True)


def register(command: type[Command]) -> type[Command]:
    """Class decorator: adds a subcommand. Adding a command is one class plus its import below."""
    return COMMANDS.register(command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="heterps",
        description="Plan and run deep-learning training on heterogeneous clusters.",
    )
    parser.add_argument("--server", help="work with a HeterPS server (see heterps --server URL -h)")
    parser.add_argument("--token", help="personal API token for --server")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        sub = subparsers.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(sub)
        sub.set_defaults(_command=command)
    return parser


EXIT_PREEMPTED = 75  # the run checkpointed and stopped early; `--resume` continues


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if remote.wants_server(argv):
        return remote.main(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._command().run(args))
    except RunPreempted as exc:
        # Not bad input: a drained run (a spot notice) to resume; sysexits' EX_TEMPFAIL.
        print(f"heterps {args.command}: stopped: {exc}", file=sys.stderr)
        return EXIT_PREEMPTED
    except HeterPSError as exc:
        print(f"heterps {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"heterps {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `heterps plan ... | head` closed our stdout: not an error worth a traceback.
        sys.stderr.close()
        return 0


# Subcommand modules register themselves on import; keep this list in one place.
from heterps_core.cli import commands as _commands  # noqa: E402,F401
