"""`heterps estimate`: the samples/s of one unit of a resource type training a zoo model whole,
with the per-operator breakdown and the estimate's error band.

The figures are the ones `heterps profile` writes into an instance for that type (the same
profile, the same instance builder; tests/heterps_core/cli/test_estimate.py checks it).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from heterps_core.cli import register
from heterps_core.cli.base import Command
from heterps_core.errors import HeterPSError
from heterps_core.limits import argument

if TYPE_CHECKING:
    from heterps_core.hardware import Catalogue, ResourceKind
    from heterps_core.hardware.throughput import ModelEstimate


@register
class EstimateCommand(Command):
    name = "estimate"
    help = ("Estimated samples/s of one unit of a resource type training a zoo model, per "
            "operator class, with the estimate's error band.")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("model", help="zoo model name (heterps profile --list)")
        parser.add_argument("--size", default="small",
                            help="zoo size: tiny, small, production, or the model's published "
                                 "configuration (dlrm: criteo-1tb, ctr_dnn: paddle)")
        parser.add_argument("--resource", required=True, metavar="TYPE",
                            help="resource type of the catalogue, e.g. gpu-a100")
        parser.add_argument("--batch-size", type=argument("batch_size"),
                            help="samples per mini-batch (default: the model's own)")
        parser.add_argument("--precision", metavar="fp32|tf32|amp",
                            help="precision of a GPU type's matrix products (default: the "
                                 "type's own: tf32 on A10G/A100/H100, fp32 on V100/T4)")
        parser.add_argument("--catalogue", metavar="FILE.json",
                            help="resource catalogue (default: the built-in one)")
        parser.add_argument("--rows-cap", type=int, default=100_000,
                            help="cap table rows for counting (a lookup moves the rows it "
                                 "reads whatever the table's size)")
        parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
        parser.add_argument("--repeats", type=argument("repeats"), default=5,
                            help="CPU types: timed runs per layer on this machine (GPU types "
                                 "are estimated from operator counts and run each layer once)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true",
                            help="print JSON: samples_per_s, precision, operators, error_band, "
                                 "layers, notes")

    def run(self, args: argparse.Namespace) -> int:
        from heterps_core import zoo
        from heterps_core.profiler.models import estimate_zoo_model
        from heterps_core.zoo.sizes import check_size

        zoo.get(args.model)  # an unknown model fails here, before the catalogue
        check_size(args.size, args.model)
        kind = _resource(_catalogue(args.catalogue), args.resource, args.precision)
        print(f"counting {args.model} {args.size} for {kind.name} ...", file=sys.stderr)
        estimate = estimate_zoo_model(args.model, kind, size=args.size,
                                      batch_size=args.batch_size, rows_cap=args.rows_cap,
                                      threads=args.threads, repeats=args.repeats,
                                      seed=args.seed)
        if args.json:
            print(json.dumps(estimate.to_dict(), indent=2))
        else:
            print(format_estimate(estimate))
        return 0


def _catalogue(path: str | None) -> Catalogue:
    from heterps_core.hardware import Catalogue, default_catalogue

    return Catalogue.load(path) if path else default_catalogue()


def _resource(catalogue: Catalogue, name: str, precision: str | None) -> ResourceKind:
    """The catalogue's kind `name`, at `precision` when one is asked for (GPU types only)."""
    from dataclasses import replace

    from heterps_core.hardware.catalogue import CatalogueError, check_precision

    if name not in catalogue.names:
        raise CatalogueError("--resource", f"no resource type {name!r}; known: "
                                           f"{', '.join(catalogue.names)}")
    kind = catalogue.get(name)
    if precision is None:
        return kind
    precision = check_precision(precision, "--precision")
    if kind.kind != "gpu":
        raise HeterPSError(f"--precision: {name} is a {kind.kind} type; precision applies to "
                           "GPU types only")
    return replace(kind, precision=precision)


def format_estimate(estimate: ModelEstimate) -> str:
    """The estimate for a person: the rate with its band and precision, then the parts."""
    kind = estimate.resource
    label = f"{kind.name} ({estimate.precision})" if kind.kind == "gpu" else kind.name
    band = (f"estimated, error band +/-{estimate.error_band:.0%} from {estimate.band_basis}"
            if estimate.error_band is not None else f"estimated; {estimate.band_basis}")
    per_batch = estimate.seconds_per_batch
    lines = [
        f"{estimate.model} {estimate.size} on one {label}, batch {estimate.batch_size:,}: "
        f"{estimate.samples_per_s:,.0f} samples/s ({band})",
        "",
        f"{'operators':<10} {'ms/batch':>10} {'share':>6} {'GFLOP':>10} {'GB moved':>10} "
        f"{'kernels':>8}",
    ]
    for op in estimate.operators:
        ms = "-" if op.seconds is None else f"{op.seconds * 1e3:.2f}"
        share = "-" if op.seconds is None else f"{op.seconds / per_batch:.0%}"
        lines.append(f"{op.name:<10} {ms:>10} {share:>6} {op.flops / 1e9:>10.1f} "
                     f"{op.bytes / 1e9:>10.2f} {op.kernels:>8}")
    lines += ["", f"{'layer':<14} {'ms/batch':>10} {'bound':>8}  rule"]
    for layer in estimate.layers:
        bound = str(layer.detail.get("bound", "-"))
        lines.append(f"{layer.name:<14} {layer.seconds * 1e3:>10.3f} {bound:>8}  {layer.rule}")
    lines += [f"note: {note}" for note in estimate.notes()]
    return "\n".join(lines)
