"""`heterps profile`: measure a model layer by layer and write a planning instance;
`heterps catalogue`: write the default resource catalogue for editing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from heterps_core.cli import register
from heterps_core.cli.base import Command
from heterps_core.cli.output import format_tiers
from heterps_core.errors import HeterPSError
from heterps_core.limits import argument
from heterps_core.progress import Progress

if TYPE_CHECKING:
    from heterps_core.hardware import Catalogue
    from heterps_core.profiler import ModelProfile
    from heterps_core.profiler.local import LocalMeasure
    from heterps_core.profiler.measure import CpuUse, Precision


# Each figure is timed at most this often, whatever --max-repeats asks (a typo is not a week).
MAX_REPEATS_LIMIT = 10_000


class ProgressBar:
    """A one-line progress bar on stderr, redrawn in place on a terminal."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.inline = self.stream.isatty()

    def __call__(self, progress: Progress) -> None:
        filled = int(self.width * progress.fraction)
        bar = "#" * filled + "." * (self.width - filled)
        line = f"profiling [{bar}] {progress.current}/{progress.total} {progress.message}"
        median = progress.metrics.get("median_s")
        if median is not None:
            # the samples' own p10..p90 width, not the median's spread (printed at the end)
            line += f" ({median * 1e3:.3f} ms, p10..p90 {progress.metrics['spread']:.0%})"
        if self.inline:
            end = "\n" if progress.current >= progress.total else ""
            self.stream.write("\r" + line.ljust(100) + end)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


@register
class ProfileCommand(Command):
    name = "profile"
    help = "Profile a zoo or imported model layer by layer and write a planning instance."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("model", nargs="?", help="zoo model name (see --list)")
        parser.add_argument("--list", action="store_true", help="list the zoo models and exit")
        parser.add_argument("--import", dest="import_spec", metavar="MODULE:FACTORY",
                            help="profile your own nn.Module instead of a zoo model")
        parser.add_argument("--example-input", metavar="SPEC",
                            help="with --import: a .pt file or shapes, e.g. "
                                 "'dense=float32[1024,13];sparse=int64[1024,26]<100000'")
        parser.add_argument("--size", default="small",  # each model checks its own sizes
                            help="zoo model size (production: tables of tens of GB)")
        parser.add_argument("--device", default="cpu", help="cpu or cuda:N")
        parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
        parser.add_argument("--batch-size", type=argument("batch_size"),
                            help="default: the model's own")
        parser.add_argument("--warmup", type=int, default=3)
        parser.add_argument("--repeats", type=argument("repeats"), default=10,
                            help="timed runs per layer at least (more until --spread)")
        parser.add_argument("--spread", type=float, default=0.03, metavar="FRACTION",
                            help="repeat each figure until its median is known within +- "
                                 "this fraction (95%% confidence; default 0.03)")
        parser.add_argument("--max-repeats", type=int, default=100, metavar="N",
                            help="at most this many timed runs per figure (default 100)")
        parser.add_argument("--force", action="store_true",
                            help="store figures timed while other processes held the cores "
                                 "(refused otherwise), labelled as measured under load")
        parser.add_argument("--clock", default="wall", choices=("wall", "cpu"),
                            help="wall: elapsed time; cpu: this thread's CPU time, immune to "
                                 "other processes on a shared machine (needs --threads 1)")
        parser.add_argument("--rows-cap", type=int, default=100_000,
                            help="cap table rows for timing (memory figures stay uncapped)")
        parser.add_argument("--optimizer", default="adam", choices=("adam", "adagrad", "sgd"),
                            help="optimizer whose state the memory figures include")
        parser.add_argument("--resources", metavar="CATALOGUE.json",
                            help="resource catalogue (default: the built-in one)")
        parser.add_argument("--gpu-precision", choices=("fp32", "tf32", "amp", "bf16"),
                            help="precision every GPU kind trains at for its estimate "
                                 "(default: each entry's own: tf32 on A10G/A100/H100, else fp32); "
                                 "a GPU without TF32/fp16 tensor cores runs fp32")
        parser.add_argument("--device-kind", metavar="NAME",
                            help="catalogue kind the profiled device is: its times are used "
                                 "as measured instead of estimated")
        parser.add_argument("--include-local", type=int, default=0, metavar="N",
                            help="add N identical resource types local-1..local-N measured "
                                 "on this machine as the runtime runs a stage (count = cores "
                                 "/ --threads, network = measured loopback, the "
                                 "parameter server's time per row timed on a real shard); "
                                 "writes a v2 instance (as for every model with sparse "
                                 "tables)")
        parser.add_argument("--target", type=argument("throughput_target"),
                            help="throughput target, samples/s")
        parser.add_argument("--samples", type=argument("samples"),
                            help="samples to train (for total cost)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--out", metavar="INSTANCE.json",
                            help="where to write the instance (default: stdout)")
        parser.add_argument("--provenance", metavar="FILE.json",
                            help="where to write the profile and where every number comes "
                                 "from (default: next to --out, *.provenance.json)")

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core import zoo

        if args.list:
            for name in zoo.names():
                print(f"{name:<14} {zoo.get(name).description}")
            return 0
        if not args.model and not args.import_spec:
            raise HeterPSError("name a zoo MODEL (see --list) or use --import MODULE:FACTORY")
        if args.target is None:
            raise HeterPSError("--target is required (samples/s the plan must sustain)")
        catalogue = _catalogue(args.resources)
        if args.gpu_precision:
            from heterps_core.hardware.catalogue import with_precision

            catalogue = with_precision(catalogue, args.gpu_precision)
        from heterps_core.profiler.instance_builder import build_instance
        from heterps_core.profiler.measure import repeat_until_known

        with repeat_until_known(_precision(args)):
            profile = _profile(args)
            if profile.layers[0].time.clock == "wall":  # a cpu clock is immune to the load
                _check_load("timing the layers", profile.cpu_use, args.force)
            local = _local(args, profile) if args.include_local else None
            if local is not None:
                _check_load(f"timing local-1..local-{args.include_local}", local.cpu_use,
                            args.force)
        print(format_measured(profile, local), file=sys.stderr)
        built = build_instance(profile, catalogue, args.target, args.samples, args.device_kind,
                               local=local, local_types=args.include_local)
        text = built.instance.to_json() + "\n"
        print(format_tiers(built.instance), file=sys.stderr)
        if args.out:
            Path(args.out).write_text(text)
            print(f"wrote {args.out}", file=sys.stderr)
        else:
            sys.stdout.write(text)
        provenance = args.provenance or (
            str(Path(args.out).with_suffix("")) + ".provenance.json" if args.out else None
        )
        if provenance:
            Path(provenance).write_text(json.dumps(built.provenance(), indent=2) + "\n")
            print(f"wrote {provenance} (where every number comes from)", file=sys.stderr)
        return 0


def _local(args: argparse.Namespace, profile: ModelProfile) -> LocalMeasure:
    from heterps_core.profiler.calibrate import utc_now
    from heterps_core.profiler.local import LocalMeasure, runtime_steps
    from heterps_core.profiler.loopback import loopback

    if args.include_local < 0 or args.import_spec:
        raise HeterPSError("--include-local needs a zoo MODEL and N >= 1")
    print(f"measuring local-1..local-{args.include_local}: runtime steps and the loopback "
          "link", file=sys.stderr)
    steps = runtime_steps(
        args.model, args.size, profile.batch_size, args.threads, max(10, args.repeats),
        args.seed, optimizer=profile.optimizer,
    )
    link = loopback(max(steps.outputs_mb[:-1] or (0.0,)) or 1.0)
    return LocalMeasure(steps.seconds, link.gbps, args.threads, utc_now(), steps.rows,
                        steps.row_s, steps.spreads, steps.cpu_use, steps.repeats, link.spread,
                        steps.row_s_spread)


def _precision(args: argparse.Namespace) -> Precision:
    from heterps_core.profiler.measure import Precision

    if not 0 < args.spread < 1:
        raise HeterPSError(f"--spread must be a fraction between 0 and 1, got {args.spread:g}")
    if args.max_repeats < args.repeats:
        raise HeterPSError(f"--max-repeats ({args.max_repeats}) must be at least --repeats "
                           f"({args.repeats})")
    if args.max_repeats > MAX_REPEATS_LIMIT:
        raise HeterPSError(f"--max-repeats must be at most {MAX_REPEATS_LIMIT:,}, got "
                           f"{args.max_repeats:,}")
    return Precision(args.spread, args.max_repeats)


def _check_load(what: str, use: CpuUse | None, force: bool) -> None:
    """Refuse figures timed while other processes held the cores, unless forced."""
    if use is None or not use.under_load:
        return
    if force:
        print(f"warning: while {what}, {use.describe()}; stored anyway (--force), the "
              "instance's name says so", file=sys.stderr)
        return
    raise HeterPSError(
        f"refusing to store this profile: while {what}, {use.describe()}, so its figures "
        "would be too slow. Profile on a quiet machine, or pass --force to store them "
        "labelled as measured under load"
    )


def format_measured(profile: ModelProfile, local: LocalMeasure | None) -> str:
    """Each measured figure with its spread and repeats, and how much of the cores was ours."""
    lines = [f"measured on {profile.device.label}: median ms per batch, +- its 95% spread"]
    head = f"  {'layer':<16} {'profiled':>10} {'spread':>7} {'runs':>5}"
    if local is not None:
        head += f" {'as a stage':>11} {'spread':>7} {'runs':>5}"
    lines.append(head)
    for i, layer in enumerate(profile.layers):
        t = layer.time
        row = f"  {layer.name:<16.16} {t.median_s * 1e3:>10.3f} {_pm(t.median_spread):>7} " \
              f"{t.repeats:>5}"
        if local is not None:
            spread = local.spreads[i] if local.spreads else None
            row += f" {local.seconds[i] * 1e3:>11.3f} {_pm(spread):>7} {local.repeats:>5}"
        lines.append(row)
    if local is not None:
        lines.append(f"  loopback {local.network_gbps:.1f} Gbit/s {_pm(local.network_spread)}; "
                     f"the server's time per row {local.row_s * 1e6:.3f} us "
                     f"{_pm(local.row_s_spread)} (in the band: the layers' spreads only)")
    for what, use in (("timing the layers", profile.cpu_use),
                      ("timing the stages", local.cpu_use if local else None)):
        if use is not None:
            label = "UNDER LOAD" if use.under_load else "ok"
            lines.append(f"  while {what}: {use.describe()} - {label}")
    return "\n".join(lines)


def _pm(spread: float | None) -> str:
    return "?" if spread is None else f"+-{spread:.1%}"


def _catalogue(path: str | None) -> Catalogue:
    from heterps_core.hardware import Catalogue, default_catalogue

    return Catalogue.load(path) if path else default_catalogue()


def _profile(args: argparse.Namespace) -> ModelProfile:
    from heterps_core.profiler import ProfileOptions, profile_chain, profile_zoo_model

    options = ProfileOptions(device=args.device, threads=args.threads, warmup=args.warmup,
                             repeats=args.repeats, optimizer=args.optimizer, clock=args.clock)
    options.check()
    bar = ProgressBar()
    if args.import_spec:
        if args.model:
            raise HeterPSError("give either a zoo MODEL or --import, not both")
        if not args.example_input:
            raise HeterPSError("--import needs --example-input (a .pt file or shapes)")
        import torch

        from heterps_core.zoo.imported import import_model, load_factory, parse_example_input

        module = load_factory(args.import_spec)
        example = parse_example_input(args.example_input, module, args.batch_size, args.seed)
        chain = import_model(module, example, args.import_spec)
        batch_size = next(iter(example.values())).shape[0]
        return profile_chain(chain, (example, torch.zeros(batch_size)), options,
                             name=args.import_spec, size="imported", progress=bar)
    if not args.model:
        raise HeterPSError("name a zoo MODEL (see --list) or use --import MODULE:FACTORY")
    return profile_zoo_model(args.model, options, size=args.size, batch_size=args.batch_size,
                             rows_cap=args.rows_cap, seed=args.seed, progress=bar)


@register
class CatalogueCommand(Command):
    name = "catalogue"
    help = "Write the default resource catalogue (specs and list prices) as JSON to edit."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--out", metavar="FILE.json", help="default: stdout")

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core.hardware import default_catalogue

        text = default_catalogue().to_json() + "\n"
        if args.out:
            Path(args.out).write_text(text)
        else:
            sys.stdout.write(text)
        return 0
