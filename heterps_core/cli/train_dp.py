"""`heterps train-dp`: data-parallel training of a zoo model under one sync mode."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from heterps_core.cli import register
from heterps_core.cli.base import Command
from heterps_core.errors import HeterPSError
from heterps_core.limits import argument

SGD_LR = 0.05  # train-dp's learning rate before it had other optimisers


class _Usage(HeterPSError):
    """A command-line value that cannot be parsed."""


@register
class TrainDataParallelCommand(Command):
    name = "train-dp"
    help = ("Train a zoo model data-parallel on heterogeneous workers (emulated clock, or real "
            "worker processes with --backend process) under a sync mode.")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("model", nargs="?", help="zoo model name, e.g. ctr_dnn")
        parser.add_argument("--size", default="tiny", help="model config size (default tiny)")
        parser.add_argument("--mode", default="bsp", help="sync mode (see --list-modes)")
        parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                            help="a sync-mode parameter; repeat for several")
        parser.add_argument("--list-modes", action="store_true",
                            help="print every sync mode with its parameters and exit")
        parser.add_argument("--backend", default="emulated",
                            help="emulated (one process, emulated clock; default) or process "
                                 "(one OS process per worker, wall clock)")
        parser.add_argument("--workers", type=argument("workers"), default=3)
        parser.add_argument("--slowdowns", default="",
                            help="comma-separated slowdown per worker, e.g. 1,2,4 (process "
                                 "backend: a sleep of (slowdown-1) x each step's compute)")
        parser.add_argument("--batch-size", type=argument("batch_size"), default=64,
                            help="per worker")
        parser.add_argument("--optimizer", default="sgd",
                            help="adam, adagrad or sgd (default): the dense layers' optimiser "
                                 "on every worker and the tables' (lazily per row; on the "
                                 "parameter server with --backend process)")
        parser.add_argument("--lr", type=argument("lr"), default=None,
                            help="learning rate of dense layers and tables (default 0.05 "
                                 "with sgd, else the optimiser's default)")
        parser.add_argument("--steps", type=argument("steps"), default=None,
                            help="stop after this many local steps of all workers")
        parser.add_argument("--duration", type=float, default=None,
                            help="stop after this many seconds (emulated, or wall-clock "
                                 "with --backend process)")
        parser.add_argument("--eval-every", type=float, default=None,
                            help="seconds between held-out evaluations")
        parser.add_argument("--target-loss", type=float, default=None)
        parser.add_argument("--bandwidth-gbps", type=float, default=1.0)
        parser.add_argument("--rebalance", action="store_true",
                            help="DLB: batch shares in proportion to measured speed")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--events", metavar="FILE",
                            help="write every event as one JSON line to FILE")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core.dataparallel import modes

        if args.list_modes:
            print(json.dumps(modes.schemas(), indent=2))
            return 0
        if not args.model:
            raise _Usage("model: required (a zoo model name, e.g. ctr_dnn)")
        return _train(args)


def _train(args: argparse.Namespace) -> int:
    from heterps_core import zoo
    from heterps_core.dataparallel import TrainConfig, event_to_dict, modes, train
    from heterps_core.dataparallel.events import EvalEvent, PhaseEvent, StragglerEvent
    from heterps_core.ps import optim

    if args.optimizer not in optim.names():
        raise _Usage(f"--optimizer: must be one of {', '.join(sorted(optim.names()))}, "
                     f"got {args.optimizer!r}")
    lr = args.lr if args.lr is not None else (
        SGD_LR if args.optimizer == "sgd" else optim.get(args.optimizer).default_lr)
    model = zoo.get(args.model)
    model_config = _model_config(model, args.size)
    mode = modes.create(args.mode, _params(args.param))
    steps = args.steps if args.steps is not None or args.duration is not None else 600
    duration = math.inf if args.duration is None else args.duration
    config = TrainConfig(
        workers=args.workers, slowdowns=_slowdowns(args.slowdowns), batch_size=args.batch_size,
        lr=lr, optimizer=args.optimizer, duration_s=duration, max_steps=steps,
        eval_every_s=args.eval_every or _eval_every(duration, args.backend),
        target_loss=args.target_loss,
        bandwidth_gbps=args.bandwidth_gbps, rebalance=args.rebalance, seed=args.seed,
        backend=args.backend,
    )
    sink = open(args.events, "w") if args.events else None  # noqa: SIM115  closed below

    def report(event: Any) -> None:
        if sink is not None:
            sink.write(json.dumps(event_to_dict(event)) + "\n")
        if args.json:
            return
        if isinstance(event, EvalEvent):
            print(f"t={event.time_s:8.3f}s  step {event.global_step:>6}  "
                  f"held-out loss {event.loss:.4f}" + _quality(event))
        elif isinstance(event, PhaseEvent):
            print(f"t={event.time_s:8.3f}s  phase {event.previous} -> {event.phase} "
                  f"({event.reason}, training loss {event.train_loss:.4f})")
        elif isinstance(event, StragglerEvent):
            flagged = [w for w, f in enumerate(event.flags) if f]
            print(f"t={event.time_s:8.3f}s  stragglers: {flagged or 'none'}")

    try:
        result = train(model, model_config, mode, config, metrics=report)
    finally:
        if sink is not None:
            sink.close()
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        print(_summary(result))
    return 0


def _model_config(model: Any, size: str) -> Any:
    try:
        return model.config(size)
    except KeyError:
        raise _Usage(f"--size: unknown size {size!r} for model {model.name!r}") from None


def _params(items: list[str]) -> dict[str, str]:
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise _Usage(f"--param: expected NAME=VALUE, got {item!r}")
        params[name.strip()] = value.strip()
    return params


def _slowdowns(text: str) -> tuple[float, ...]:
    if not text.strip():
        return ()
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise _Usage(f"--slowdowns: expected numbers like 1,2,4, got {text!r}") from None


def _eval_every(duration: float, backend: str) -> float:
    if math.isinf(duration):
        # Real workers keep training while the server evaluates: evaluate less often.
        return 0.5 if backend == "process" else 0.05
    return duration / 40


def _clock(result: Any) -> str:
    return "trained" if result.config.get("backend") == "process" else "emulated"


def _quality(event: Any) -> str:
    if event.auc is not None:
        return f"  AUC {event.auc:.4f}"
    if event.accuracy is not None:
        return f"  accuracy {event.accuracy:.4f}"
    return ""


def _summary(result: Any) -> str:
    lines = [
        f"mode {result.mode} {result.mode_params}  stopped: {result.stopped}  "
        f"{_clock(result)} {result.time_s:.3f} s  wall {result.wall_s:.1f} s  "
        f"steps {result.global_steps}",
        f"{'worker':>6} {'slowdown':>8} {'profiled s':>10} {'steps':>6} {'commits':>7} "
        f"{'MB sent':>9} {'wait s':>8} {'max stale':>9} {'batch':>6}",
    ]
    for w, p in zip(result.workers, result.profile, strict=True):
        lines.append(
            f"{w.worker:>6} {w.slowdown:>8.2f} {p.compute_s:>10.5f} {w.steps:>6} {w.commits:>7} "
            f"{w.bytes_sent / 1e6:>9.3f} {w.wait_s:>8.3f} {w.max_staleness:>9} {w.batch_size:>6}"
        )
    if result.switch is not None:
        lines.append(f"switched to {result.switch.phase} at {result.switch.time_s:.3f} s "
                     f"({result.switch.reason})")
    lines.append(f"final held-out loss {result.final.loss:.4f}" + _quality(result.final))
    return "\n".join(lines)
