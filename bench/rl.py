"""RL scheduler quality: gap to the exact optimum, next to the other schedulers.

    .venv/bin/python bench/rl.py                        # the documented run, writes the doc
    .venv/bin/python bench/rl.py --quick --out -        # a smoke run, prints the tables

Instances: generated ones (`heterps_core.generate.random_instance`, seeds 0..k-1, disjoint from
the pretrained policy's training seeds >= 1,000,000) of 8, 16, 32 and 64 layers with 2-6
resources, plus the zoo instances when the profiler can build them. For each instance:

- exact: the optimum every gap is measured against (gap = cost / optimum - 1).
- rl per-instance: REINFORCE on the instance (warm-started from the shipped policy), then the
  iterated local search, within `--budget-s`; also the pure-RL number (best sampled plan,
  before the search).
- rl pretrained: zero-shot (greedy decode, best of 32 decoded plans, then a short polish).
- greedy, genetic, bayes, random: each given the per-instance RL run's wall time as budget.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heterps_core import schedulers  # noqa: E402
from heterps_core.generate import random_instance  # noqa: E402
from heterps_core.instance import Instance  # noqa: E402
from heterps_core.rl.planner import plan_with_rl  # noqa: E402
from heterps_core.schedulers.exact import exact_plan  # noqa: E402

BASELINES = ("greedy", "genetic", "bayes", "random")
LAYERS = (8, 16, 32, 64)
RESOURCES = (2, 3, 4, 5, 6)


@dataclass
class Row:
    instance: str
    group: str
    n_layers: int
    n_resources: int
    optimum: float
    gaps: dict[str, float | None] = field(default_factory=dict)  # None: no feasible plan
    times: dict[str, float] = field(default_factory=dict)
    fallback: dict[str, bool] = field(default_factory=dict)


def gap(cost: float | None, optimum: float) -> float | None:
    return None if cost is None else cost / optimum - 1


def zoo_instances(cache: Path) -> list[Instance]:
    """Every zoo model (production size) profiled on this CPU and priced on the default
    catalogue (8 resource kinds), as a planning instance; cached as JSON in `cache`.

    Target: four times the throughput of one unit of the cheapest GPU running the whole
    model, halved until the exact solver finds a feasible plan."""
    from heterps_core import zoo
    from heterps_core.hardware.defaults import default_catalogue
    from heterps_core.profiler import ProfileOptions, profile_zoo_model
    from heterps_core.profiler.instance_builder import build_instance

    cache.mkdir(parents=True, exist_ok=True)
    catalogue = default_catalogue()
    out = []
    for name in zoo.names():
        path = cache / f"{name}.json"
        if path.exists():
            out.append(Instance.load(path))
            continue
        options = ProfileOptions(threads=1, warmup=1, repeats=3)
        profile = profile_zoo_model(name, options, size="production")
        probe = build_instance(profile, catalogue, 1.0, measured_kind=catalogue.names[0]).instance
        gpu = next(r.name for r in sorted(probe.resources, key=lambda r: r.price_per_hour)
                   if r.kind == "gpu")
        seconds = sum(layer.compute_s.get(gpu, min(layer.compute_s.values()))
                      for layer in probe.layers)
        target = 4 * probe.batch_size / seconds
        for _ in range(12):
            inst = build_instance(profile, catalogue, round(target, 1), samples=1e9,
                                  measured_kind=catalogue.names[0], name=f"zoo-{name}").instance
            if exact_plan(inst).feasible:
                break
            target /= 2
        inst.save(path)
        out.append(inst)
    return out


def run_instance(instance: Instance, group: str, args: argparse.Namespace, seed: int) -> Row:
    t = time.perf_counter()
    exact = exact_plan(instance)
    exact_s = time.perf_counter() - t
    assert exact.feasible and exact.cost_per_hour
    row = Row(instance.name, group, len(instance.layers), len(instance.resources),
              exact.cost_per_hour)
    row.times["exact"] = exact_s

    t = time.perf_counter()
    zs = plan_with_rl(instance, seed=seed, pretrained=True)
    zs_wall = time.perf_counter() - t
    assert zs.final is not None
    row.gaps["pre greedy"] = gap(zs.greedy.cost if zs.greedy else None, row.optimum)
    row.gaps["pre best-of-32"] = gap(zs.policy_best.cost if zs.policy_best else None, row.optimum)
    row.gaps["pre +polish"] = gap(zs.final.cost_per_hour, row.optimum)
    row.times["pre +polish"] = zs_wall
    row.fallback["pre +polish"] = any("fell back" in n for n in zs.final.notes)

    if args.per_instance and (args.per_instance_max_layers >= row.n_layers):
        t = time.perf_counter()
        pi = plan_with_rl(instance, seed=seed, budget_s=args.budget_s)
        wall = time.perf_counter() - t
        assert pi.final is not None
        row.gaps["rl pure"] = gap(pi.policy_best.cost if pi.policy_best else None, row.optimum)
        row.gaps["rl"] = gap(pi.final.cost_per_hour, row.optimum)
        row.times["rl"] = wall
        row.fallback["rl"] = any("fell back" in n for n in pi.final.notes)
        known = set(schedulers.names()) if seed < args.baseline_seeds else set()
        for name in BASELINES:
            if name not in known:
                continue
            t = time.perf_counter()
            plan = schedulers.create(name, seed=seed, budget_s=wall).plan(instance)
            row.times[name] = time.perf_counter() - t
            row.gaps[name] = gap(plan.cost_per_hour if plan.feasible else None, row.optimum)
    return row


def instances(args: argparse.Namespace) -> list[tuple[str, Instance, int]]:
    out = [("zoo", inst, 0) for inst in zoo_instances(Path(args.zoo_cache))] if args.zoo else []
    for n_layers in args.layers:
        for n_resources in RESOURCES:
            for seed in range(args.seeds):
                out.append((f"L{n_layers}", random_instance(seed, n_layers, n_resources), seed))
    return out


def summarise(rows: list[Row], column: str) -> str:
    gaps = [r.gaps[column] for r in rows if column in r.gaps]
    times = [r.times[column] for r in rows if column in r.times]
    if not gaps:
        return "| - | - | - | - | - | - |"
    feasible = [g for g in gaps if g is not None]
    within1 = sum(1 for g in feasible if g <= 0.01 + 1e-9)
    if not feasible:
        return f"| {len(gaps)} | none feasible | | | | |"
    ordered = sorted(feasible)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    t = f"{statistics.median(times):.2f} / {max(times):.2f}" if times else "-"
    return (
        f"| {len(gaps)} | {statistics.median(feasible):.2%} | {p95:.2%} | {max(feasible):.2%} "
        f"| {within1}/{len(gaps)} | {t} |"
    )


def table(rows: list[Row], columns: list[str], title: str) -> list[str]:
    lines = [f"### {title}", "",
             "| scheduler | instances | median gap | p95 gap | worst gap | within 1% "
             "| time s (median / max) |",
             "|---|---|---|---|---|---|---|"]
    for column in columns:
        lines.append(f"| {column} " + summarise(rows, column))
    lines.append("")
    return lines


def _source_hash() -> str:
    import hashlib

    import heterps_core.generate as generate

    return hashlib.sha256(Path(generate.__file__).read_bytes()).hexdigest()[:16]


def _policy_hash() -> str:
    import hashlib

    from heterps_core.rl.pretrained import PRETRAINED_PATH

    return hashlib.sha256(PRETRAINED_PATH.read_bytes()).hexdigest()[:16]


def report(rows: list[Row], args: argparse.Namespace, seconds: float) -> str:
    columns = ["rl", "rl pure", "pre greedy", "pre best-of-32", "pre +polish", *BASELINES]
    lines = [
        "# RL scheduler: gap to the exact optimum",
        "",
        f"Written by `bench/rl.py` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores shared with "
        f"other engineers' jobs (load is noted below), Python {platform.python_version()}, "
        f"whole run {seconds:.0f} s.",
        "",
        f"Command: `.venv/bin/python bench/rl.py {' '.join(sys.argv[1:])}`",
        "",
        f"Instances come from `heterps_core/generate.py` with SHA-256 `{_source_hash()}` and the "
        f"shipped policy is `heterps_core/rl/pretrained.pt` with SHA-256 `{_policy_hash()}`; "
        "the generator is another team's and still changing, so other versions give other "
        "instances (the optimum of every instance is listed at the end to compare).",
        "",
        "Gap = cost per hour / exact optimum - 1. Columns: `rl` = per-instance training "
        f"(budget {args.budget_s:g} s) plus the iterated local search; `rl pure` = the best plan "
        "the policy sampled during that training, before any search; `pre greedy` = the "
        "shipped pretrained policy's greedy decode, zero-shot; `pre best-of-32` = best of the "
        "greedy plus 31 sampled plans; `pre +polish` = that plus the iterated local search until "
        "0.75 s after planning started, and the homogeneous fallback (what `--pretrained` "
        "returns). The baselines were given the per-instance RL run's wall time as `budget_s`; "
        "they stop on their own criteria before it (their times are in the tables). An "
        "infeasible answer is excluded from the gap figures but counts against 'within 1%'.",
        "",
    ]
    groups = ["zoo", *[f"L{n}" for n in args.layers]]
    for group in groups:
        sel = [r for r in rows if r.group == group]
        if sel:
            lines += table(sel, columns, f"{group} ({len(sel)} instances)")
    if not any(r.group == "zoo" for r in rows):
        lines += ["The zoo instances were not part of this run (`--no-zoo`).", ""]
    accept = [r for r in rows if r.group != "zoo" and r.n_layers <= 32 and r.n_resources <= 4
              and "rl" in r.gaps]
    lines += table(accept, ["rl", "rl pure"], "Acceptance set: generated, <= 32 layers, 2-4 "
                   "resources")
    zero_shot = ["pre greedy", "pre best-of-32", "pre +polish"]
    lines += table([r for r in rows if r.group != "zoo"], zero_shot,
                   "Pretrained, zero-shot, every generated instance")
    lines += table([r for r in rows if r.group != "zoo" and r.n_layers <= 32], zero_shot,
                   "Pretrained, zero-shot, generated instances up to 32 layers")
    fallbacks = sum(r.fallback.get("pre +polish", False) for r in rows)
    per_instance = sum(r.fallback.get("rl", False) for r in rows)
    lines += [f"The homogeneous fallback decided the pretrained answer on {fallbacks} of "
              f"{len(rows)} instances and the per-instance answer on {per_instance} of "
              f"{sum('rl' in r.gaps for r in rows)}.", "", "## Every instance", "",
              "| instance | layers | resources | optimum $/h | " + " | ".join(columns) + " |",
              "|---|---|---|---|" + "---|" * len(columns)]
    for r in rows:
        cells = []
        for c in columns:
            g = r.gaps.get(c, "-")
            cells.append("-" if g == "-" else ("infeasible" if g is None else f"{g:.2%}"))
        lines.append(f"| {r.instance} | {r.n_layers} | {r.n_resources} | {r.optimum:,.3f} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=2, help="instances per (layers, resources)")
    parser.add_argument("--layers", type=lambda s: [int(x) for x in s.split(",")],
                        default=list(LAYERS))
    parser.add_argument("--budget-s", type=float, default=60.0, help="per-instance RL budget")
    parser.add_argument("--per-instance-max-layers", type=int, default=64)
    parser.add_argument("--no-per-instance", dest="per_instance", action="store_false")
    parser.add_argument("--baseline-seeds", type=int, default=1,
                        help="run the baselines on instances with seed below this")
    parser.add_argument("--no-zoo", dest="zoo", action="store_false")
    parser.add_argument("--zoo-cache", default="/tmp/heterps-rl-bench-zoo")
    parser.add_argument("--quick", action="store_true", help="2 sizes, 1 seed, 5 s budgets")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "rl.md"))
    args = parser.parse_args()
    if args.quick:
        args.layers, args.seeds, args.budget_s = [8, 16], 1, 5.0
    start = time.perf_counter()
    rows = []
    for group, instance, seed in instances(args):
        row = run_instance(instance, group, args, seed)
        rows.append(row)
        print(f"{row.instance}: " + ", ".join(
            f"{k} {'inf' if v is None else f'{v:.2%}'}" for k, v in row.gaps.items()),
            file=sys.stderr, flush=True)
    text = report(rows, args, time.perf_counter() - start)
    text += f"\nLoad average at the end of the run: {os.getloadavg()[0]:.1f} (2 cores).\n"
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
