"""`heterps run PLAN.json --model NAME --steps N`: execute a plan with the runtime.

The arguments here; the input refused before torch loads in run_checks.py, the run they ask
for in run_config.py, what is printed in run_output.py (imported inside `run`: they load
torch). The job processes' template (runtime/template.py) starts right after the checks, so
its imports overlap the command's own.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from heterps_core.cli import register
from heterps_core.cli.base import Command
from heterps_core.limits import argument

if TYPE_CHECKING:
    from heterps_core.runtime.spec import JobSpec


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
            help="default: the plan's (cost model v2); v1 plans: 1, or 4 with --sync bsp and "
            "several stages",
        )
        parser.add_argument(
            "--sync", help="sync mode: async or bsp (the plain loop's exact losses); default: "
            "the plan's (v2), else async (as a v1 plan is priced)"
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

        from heterps_core.cli.run_checks import refuse_bad_input
        from heterps_core.runtime import template

        refuse_bad_input(args)  # torch-free: bad input is refused in well under a second
        template.prestart()  # imports torch for the job processes while we import it too
        from heterps_core.cli.run_config import run_config
        from heterps_core.cli.run_output import (
            ProgressLine,
            plan_records,
            summary,
            summary_lines,
        )
        from heterps_core.runtime.launcher import Launcher

        try:  # a run refused now leaves no template running in the caller's process
            config = run_config(args)
            line = ProgressLine(sys.stderr)
            launcher = Launcher(config, sink=line)
        except BaseException:
            template.discard()
            raise
        priced = [s.checkpoint_every for s in config.plan.stages
                  if isinstance(s.checkpoint_every, int) and s.checkpoint_every > 0]
        if priced and args.checkpoint_dir is None and args.checkpoint_every is None:
            print(f"heterps run: warning: the plan's spot stages checkpoint every {min(priced):,}"
                  " steps, but without --checkpoint-dir nothing is checkpointed", file=sys.stderr)
        launcher.start()
        if launcher.resume_notice:  # a damaged newest checkpoint: say which step runs instead
            print(f"heterps run: warning: {launcher.resume_notice}", file=sys.stderr)
        counting_from = time.time()  # where the launcher's metrics start (startup_s)
        if any(t.startswith("remote") for t in (r.target for r in launcher.spec.ranks)):
            port = launcher.address.rpartition(":")[2]
            # Agents on other machines need a name they can resolve, not the loopback address.
            host = socket.gethostname() if args.host in ("0.0.0.0", "") else args.host
            print(f"waiting for worker agents: --coordinator {host}:{port}", file=sys.stderr)
        result = launcher.wait()
        line.close()
        first = result.last_sample.startup_s if result.last_sample else None
        startup = None if first is None else counting_from + first - command_started()
        if args.json:
            out = summary(config, result, launcher.spec, args.data, plan_records(args.plan))
            out["command_startup_s"] = startup
            out.update(checkpoint_record(args, launcher.spec, result.sealed_steps))
            print(json.dumps(out, indent=2))
            return 0
        for text in summary_lines(config, result, launcher.spec):
            print(text)
        record = checkpoint_record(args, launcher.spec, result.sealed_steps)
        if record["checkpoint_every"] is not None:
            sealed = ", ".join(str(step) for step in result.sealed_steps) or "none"
            steps = "step" if len(result.sealed_steps) == 1 else "steps"
            print(f"checkpoints every {record['checkpoint_every']:,} steps "
                  f"(from {record['checkpoint_every_from']}); sealed at {steps} {sealed}")
        if startup is not None:
            print(f"first mini-batch {startup:.1f} s after the command started")
        return 0


def command_started() -> float:
    """This process's start (wall clock): the kernel's start time, in clock ticks since boot."""
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - age


def checkpoint_record(
    args: argparse.Namespace, spec: JobSpec, sealed: tuple[int, ...]
) -> dict[str, object]:
    """The checkpoint interval that ran and where it came from (`--checkpoint-every`, else
    the plan's spot stages: runtime/compile.py), and every step this run sealed; a null
    interval: the final checkpoint only, or no checkpoint directory."""
    every = spec.checkpoint_every if spec.checkpoint_dir is not None else None
    source = None
    if every is not None:
        source = "--checkpoint-every" if args.checkpoint_every is not None else (
            "the plan's spot stages")
    return {"checkpoint_every": every, "checkpoint_every_from": source,
            "checkpoints_sealed": list(sealed)}
