"""Does heterogeneity pay? The exact optimum against the best homogeneous plan, per zoo model;
writes docs/benchmarks/heterogeneity.md.

    .venv/bin/python bench/heterogeneity.py            # every zoo model at production size,
                                                       # 21 targets, async and bsp
    .venv/bin/python bench/heterogeneity.py --quick    # ctr_dnn and dlrm, 5 targets

Each zoo model is profiled at production size on this machine's CPU (one thread, CPU-time
clock: other processes do not slow the figures; tables capped for timing), and its instance
built for the default catalogue as `heterps profile` builds it (CPU kinds scaled from that
measurement, GPU kinds from operator counts alone), in two variants: with the
parameter-server role `heterps profile --include-local` writes (every CPU kind may host the
shards, each sparse layer's touched rows pulled and pushed per mini-batch), and without a
server (the tables split over the units of their stage, as `heterps profile` writes it
without local types). For each variant and sync mode the feasible range
of targets is found (low: the throughput of the cheapest plan at all; high: the largest
target any plan meets, by bisection), and at 21 log-spaced targets in it the exact optimum
is compared with the best plan that puts every stage and the server on one type
(`heterps_core.heterogeneity`, same cost model, same exact solver).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from heterps_core import zoo  # noqa: E402
from heterps_core.hardware import default_catalogue  # noqa: E402
from heterps_core.heterogeneity import Heterogeneity, compare, stage_bounds  # noqa: E402
from heterps_core.instance import SCHEMA_VERSION, Instance  # noqa: E402
from heterps_core.plan import Plan  # noqa: E402
from heterps_core.profiler import ProfileOptions, profile_zoo_model  # noqa: E402
from heterps_core.profiler.instance_builder import BuiltInstance, build_instance  # noqa: E402
from heterps_core.schedulers.exact import exact_plan  # noqa: E402

QUICK_MODELS = ("ctr_dnn", "dlrm")
SYNCS = ("async", "bsp")
BISECTIONS = 14  # the largest feasible target to within about 0.1% on a 10^6 range
NOTES_BEGIN, NOTES_END = "<!-- reading: begin -->", "<!-- reading: end -->"


@dataclass(frozen=True)
class Row:
    target: float
    plan: Plan
    against: Heterogeneity
    why: str


SERVER = "server on CPU kinds"
NO_SERVER = "no server"


@dataclass(frozen=True)
class Sweep:
    model: str
    variant: str
    sync: str
    low: float
    high: float
    rows: tuple[Row, ...]
    note: str = ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="ctr_dnn and dlrm, 5 targets")
    parser.add_argument("--models", help="comma-separated zoo models (default: all)")
    parser.add_argument("--targets", type=int, help="targets per sweep (default 21)")
    parser.add_argument("--size", default="production")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per layer")
    parser.add_argument("--out", default=str(REPO / "docs" / "benchmarks" / "heterogeneity.md"))
    args = parser.parse_args()
    names = (args.models.split(",") if args.models
             else list(QUICK_MODELS) if args.quick else zoo.names())
    points = args.targets or (5 if args.quick else 21)
    started, load_before = time.time(), os.getloadavg()
    sweeps: list[Sweep] = []
    for name in names:
        built = build(name, args.size, args.repeats)
        variants = {SERVER: built.instance, NO_SERVER: without_server(built.instance)}
        for variant, instance in variants.items():
            for sync in SYNCS:
                sweeps.append(sweep(name, variant, instance.as_v2(sync), built, points))
                print(f"done {name}, {variant}, {sync}", file=sys.stderr, flush=True)
    elapsed = time.time() - started
    command = "bench/heterogeneity.py " + " ".join(sys.argv[1:])
    text = render(sweeps, command.strip(), elapsed, load_before, os.getloadavg(), args,
                  kept_notes(Path(args.out)))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"wrote {args.out} in {elapsed:.0f} s", file=sys.stderr)
    return 0


def build(name: str, size: str, repeats: int) -> BuiltInstance:
    """The zoo model's instance for the default catalogue, as `heterps profile` builds it."""
    import torch

    torch.set_num_threads(1)
    options = ProfileOptions(threads=1, warmup=1, repeats=repeats, clock="cpu")
    profile = profile_zoo_model(name, options, size=size)
    return build_instance(profile, default_catalogue(), 1.0, name=f"{name}-{size}")


def without_server(instance: Instance) -> Instance:
    """The v1 reading of a profiled instance: no server role, each table split over the
    units of its stage. (The builder gives a model with sparse tables the role `heterps
    profile` writes: every CPU kind may host the shards, priced by its network, no `row_s`.)"""
    data = instance.to_dict()
    data["version"] = SCHEMA_VERSION
    for key in ("parameter_server", "sync", "micro_batches"):
        data.pop(key, None)
    for item in data["layers"]:
        for key in ("sparse_pull_mb", "sparse_push_mb", "sparse_rows"):
            item.pop(key, None)
    return Instance.from_dict(data)


def feasible_range(instance: Instance) -> tuple[float, float] | str:
    """(the cheapest plan's own throughput, the largest target any plan meets)."""
    cheapest = exact_plan(instance.with_target(1.0))
    if not cheapest.feasible or not cheapest.throughput:
        return f"no plan at 1 sample/s: {cheapest.reason}"
    low = hi_ok = cheapest.throughput
    hi_bad = None
    while hi_bad is None:
        trial = hi_ok * 4
        if exact_plan(instance.with_target(trial)).feasible:
            hi_ok = trial
        else:
            hi_bad = trial
        if hi_ok > 1e12:
            return "feasible beyond 1e12 samples/s"
    for _ in range(BISECTIONS):
        mid = math.sqrt(hi_ok * hi_bad)
        if exact_plan(instance.with_target(mid)).feasible:
            hi_ok = mid
        else:
            hi_bad = mid
    return low, hi_ok


def sweep(name: str, variant: str, instance: Instance, built: BuiltInstance,
          points: int) -> Sweep:
    found = feasible_range(instance)
    if isinstance(found, str):
        return Sweep(name, variant, instance.sync, math.nan, math.nan, (), found)
    low, high = found
    ratio = (high / low) ** (1 / (points - 1)) if points > 1 else 1.0
    rows = []
    for k in range(points):
        target = low * ratio**k if k < points - 1 else high
        inst = instance.with_target(target)
        plan = exact_plan(inst)
        against = compare(inst, plan)
        rows.append(Row(target, plan, against, why(inst, plan, built)))
    return Sweep(name, variant, instance.sync, low, high, tuple(rows))


def why(instance: Instance, plan: Plan, built: BuiltInstance) -> str:
    """Which types the optimum mixes and what each stage is bound by: the cost model's
    largest time term and what sets its units, and the roofline's bound of its heaviest
    layer on that type (with the GPU's precision)."""
    if not plan.feasible:
        return f"infeasible: {plan.reason}"
    details = {(f.layer, f.resource): f for f in built.figures}
    parts = []
    for bound in stage_bounds(instance, plan):
        layers = instance.layers[bound.first:bound.last + 1]
        heaviest = max(layers, key=lambda layer: layer.compute_s[bound.resource])
        figure = details.get((heaviest.name, bound.resource))
        roofline = ""
        if figure is not None and "bound" in figure.detail:
            precision = figure.detail.get("precision")
            roofline = f", {heaviest.name} {figure.detail['bound']}-bound" + (
                f" ({precision})" if precision else "")
        parts.append(bound.describe(instance) + roofline)
    server = plan.parameter_server
    if server is not None:
        parts.append(f"server on {server.resource} x{server.shards}")
    return "; ".join(parts)


def revision() -> str:
    """The commit the run was made on (and whether the tree had changes)."""
    import subprocess

    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--",
                                "heterps_core", "bench"], capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "outside a git checkout"
    return f"commit {head}" + (" with uncommitted changes to heterps_core/bench" if dirty
                               else "")


def kept_notes(path: Path) -> str:
    """The hand-written reading of an earlier run, kept between the markers (rerunning the
    bench keeps it; its date says which run it read)."""
    text = path.read_text() if path.exists() else ""
    if NOTES_BEGIN in text and NOTES_END in text:
        return text.split(NOTES_BEGIN, 1)[1].split(NOTES_END, 1)[0]
    return "## Reading\n\n(none yet)"


def render(sweeps: list[Sweep], command: str, elapsed: float, load_before: tuple[float, ...],
           load_after: tuple[float, ...], args: argparse.Namespace, notes: str) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    catalogue = default_catalogue()
    gpus = ", ".join(f"{k.name} {k.precision}" for k in catalogue.kinds if k.kind == "gpu")
    lines = [
        "# Does heterogeneity pay?",
        "",
        f"Generated by `.venv/bin/python {command}` on {now} in {elapsed:.0f} s, {revision()} "
        f"({platform.machine()}, {os.cpu_count()} cores shared with other work, load average "
        f"{load_before[0]:.1f} at the start and {load_after[0]:.1f} at the end; the CPU figures "
        "are CPU-time measurements of one thread, so the load slows the run, not the figures).",
        "",
        "Per zoo model at " + args.size + " size and the default catalogue (GPU precisions: "
        f"{gpus}), two variants: *{SERVER}* (the role `heterps profile --include-local` "
        "writes: the tables on shards of a CPU kind, priced by its network) and "
        f"*{NO_SERVER}* (the tables split over the units of their stage). For each variant "
        "and sync mode, targets log-spaced over the feasible range (from the cheapest plan's "
        "own throughput to the largest target any plan meets). *ratio* = the best "
        "homogeneous plan's $/h over the exact optimum's, where a homogeneous plan puts every "
        "stage **and** the server on one type (with a server, only a type that may host it "
        "can be homogeneous: a GPU-only cluster has nowhere to put the shards in that "
        "variant). `heterps_core/heterogeneity.py` computes it; the plan page and "
        "`heterps plan --json` state it for the chosen plan.",
        "",
        "Caveat: the GPU figures are estimates (operator roofline, within the validation's "
        "band, docs/benchmarks/profiler.md), and the CPU kinds are scaled from this machine's "
        "measurement; both change the answer. Rerun after the zoo chain or the catalogue's "
        "precisions change.",
        "",
        "## Summary",
        "",
        "*heterogeneous optima*: the optimum pays for more than one type (its server "
        "included); *stages mixed*: its stages alone run on more than one type.",
        "",
        "| model | variant | sync | feasible range (samples/s) | heterogeneous optima | "
        "stages mixed | ratio median | ratio max | types in the optima |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sweeps:
        if not s.rows:
            lines.append(f"| {s.model} | {s.variant} | {s.sync} | {s.note} | - | - | - | - "
                         "| - |")
            continue
        ratios = [r.against.ratio for r in s.rows if r.against.ratio is not None]
        mixed = sum(1 for r in s.rows if r.against.heterogeneous)
        staged = sum(1 for r in s.rows if len({st.resource for st in r.plan.stages}) > 1)
        types = sorted({t for r in s.rows for t in r.against.mix})
        lines.append(
            f"| {s.model} | {s.variant} | {s.sync} | {s.low:,.0f} .. {s.high:,.0f} | "
            f"{mixed}/{len(s.rows)} | {staged}/{len(s.rows)} | "
            f"{_ratio(statistics.median(ratios) if ratios else None)} | "
            f"{_ratio(max(ratios) if ratios else None)} | {', '.join(types)} |")
    lines += ["", NOTES_BEGIN, notes.strip(), NOTES_END]
    for s in sweeps:
        lines += ["", f"## {s.model}, {s.variant}, {s.sync}", ""]
        if not s.rows:
            lines.append(f"No sweep: {s.note}.")
            continue
        lines += [
            "| target | optimum $/h | optimum mixes | best homogeneous | its $/h | ratio | why |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in s.rows:
            best = r.against.best
            lines.append(
                f"| {r.target:,.0f} | {_money(r.plan.cost_per_hour)} | "
                f"{' + '.join(r.against.mix) or '-'} | "
                f"{best.stages[0].resource if best is not None and best.stages else 'none'} | "
                f"{_money(best.cost_per_hour if best is not None else None)} | "
                f"{_ratio(r.against.ratio)} | {r.why} |")
    return "\n".join(lines) + "\n"


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


if __name__ == "__main__":
    raise SystemExit(main())
