"""Repeatability benchmark: do fresh profiles give the same predictions, and the run's?

    .venv/bin/python bench/repeatability.py [--model ctr_dnn] [--size small] [--profiles 3]
                                            [--steps 120] [--force] [--out FILE]

Issue 21 item 9. `--profiles` fresh profiles, one after the other, on the profile CLI's own
path: `heterps profile MODEL --size S --include-local 2 --threads 1` (each figure repeated
until its median is known within 3%, refused when other processes held the cores, unless
`--force`). From each, the acceptance plans of bench/prediction.py (1 stage, 2 stages async,
2 stages bsp) are priced there (`prediction.price`) with their throughput band
(`heterps_core.throughput_band`); each plan shape is then run once with the runtime
(`prediction.run`). The table: every profile's prediction, their spread (largest over
smallest, minus 1), and each against the measured run. Acceptance: the predictions within 5%
of each other and each within 10% of the run, on a quiet machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from prediction import (  # noqa: E402
    BIND,
    PY,
    SHAPES,
    Shape,
    price,
    run,
    write_keeping_notes,
)

from heterps_core.instance import Instance  # noqa: E402
from heterps_core.throughput_band import throughput_band  # noqa: E402

AGREE = 0.05  # the profiles' predictions within 5% of each other
ACCURATE = 0.10  # each within 10% of the measured run


@dataclass(frozen=True)
class Profiled:
    """One fresh profile: its instance and how much of the cores others held meanwhile."""

    instance: Instance
    held: float  # the larger of the layer timing's and the stage timing's share
    seconds: float


@dataclass(frozen=True)
class Row:
    shape: Shape
    predicted: tuple[float, ...]  # one per profile
    bands: tuple[tuple[float, float], ...]  # (-, +) relative, one per profile
    measured: float
    load: float

    @property
    def spread(self) -> float:
        return max(self.predicted) / min(self.predicted) - 1

    def errors(self) -> list[float]:
        return [self.measured / p - 1 for p in self.predicted]

    @property
    def accepted(self) -> bool:
        return self.spread <= AGREE and all(abs(e) <= ACCURATE for e in self.errors())


def fresh_profile(model: str, size: str, out: Path, force: bool) -> Profiled:
    """`heterps profile` as a user runs it; a refusal (the machine was busy) stops the bench
    with the CLI's own message."""
    started = time.perf_counter()
    done = subprocess.run(
        [PY, "-m", "heterps_core", "profile", model, "--size", size, "--threads", "1",
         "--include-local", "2", "--target", "1000", "--out", str(out),
         *(["--force"] if force else [])],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        sys.exit(f"profile refused or failed:\n{done.stderr.strip().splitlines()[-1]}")
    provenance = json.loads(out.with_name(out.stem + ".provenance.json").read_text())
    uses = [provenance["profile"].get("cpu_use")] + [
        f["detail"].get("cpu_use") for f in provenance["compute_s"] if f["resource"] == "local-1"]
    held = max((u["held"] for u in uses if u), default=0.0)
    return Profiled(Instance.load(out), held, time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="ctr_dnn")
    parser.add_argument("--size", default="small")
    parser.add_argument("--profiles", type=int, default=3)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--force", action="store_true",
                        help="keep profiles taken under load (labelled; for a smoke test)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "repeatability.md"))
    args = parser.parse_args()
    if args.profiles < 2:
        parser.error("--profiles must be at least 2 (the point is to compare them)")
    command = "python bench/repeatability.py " + " ".join(sys.argv[1:])
    start_load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.perf_counter()
    shapes = [s for s in SHAPES if s.accept]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        profiles = []
        for k in range(args.profiles):
            profiles.append(fresh_profile(args.model, args.size, work / f"profile-{k}.json",
                                          args.force))
            print(f"profile {k + 1}: {profiles[-1].seconds:.0f} s, cores held by others "
                  f"{profiles[-1].held:.0%}", file=sys.stderr, flush=True)
        rows = []
        for shape in shapes:
            plans = [price(p.instance, shape) for p in profiles]
            bands = []
            for p, plan in zip(profiles, plans, strict=True):
                band = throughput_band(p.instance.as_v2(shape.sync, shape.micro), plan)
                bands.append((band.minus, band.plus) if band else (0.0, 0.0))
            load = os.getloadavg()[0]
            measured, _, _ = run(plans[0], args.model, args.size, args.steps, work)
            row = Row(shape, tuple(p.throughput or 0.0 for p in plans), tuple(bands), measured,
                      load)
            rows.append(row)
            print(f"{shape.label:<10} {shape.sync:<5} predicted "
                  f"{', '.join(f'{p:,.0f}' for p in row.predicted)} (spread {row.spread:.1%}) "
                  f"measured {measured:,.0f}", file=sys.stderr, flush=True)
    write(rows, profiles, Path(args.out), command, time.perf_counter() - started, start_load,
          args.steps)
    print(Path(args.out).read_text())
    return 0


def write(rows: list[Row], profiles: list[Profiled], out: Path, command: str, seconds: float,
          load: str, steps: int) -> None:
    met = all(r.accepted for r in rows)
    held = ", ".join(f"{p.held:.0%}" for p in profiles)
    lines = [
        "# Repeatability: fresh profiles, their predictions and the run",
        "",
        f"**Acceptance (issue 21 item 9): {'met' if met else 'not met'}** on this run: the "
        f"predictions of {len(profiles)} fresh profiles within {AGREE:.0%} of each other and "
        f"each within {ACCURATE:.0%} of the measured run, for every plan below.",
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC with `{command}` "
        f"({seconds:.0f} s), {os.cpu_count()} cores, load average at start {load}. "
        "Profiles: `heterps profile MODEL --size S --include-local 2 --threads 1 --target 1000`, "
        "taken one after the other, each figure repeated until its median is known within "
        f"+-3% (95%) or 100 runs; the share of the cores other processes held while each was "
        f"timed: {held}. Predicted: bench/prediction.py's `price` on each profile "
        f"(local-1 / local-2 alternating, one server shard). Measured: `heterps run PLAN "
        f"--json --bind {BIND}`, {steps} mini-batches, once per plan.",
        "",
        "*Spread*: the largest prediction over the smallest, minus 1. *Band*: the plan's "
        "throughput band from its figures' spread (`heterps plan` prints it), per profile. "
        "*Error*: measured over predicted, minus 1, per profile.",
        "",
        "| plan | sync | " + " | ".join(f"profile {k + 1}" for k in range(len(profiles)))
        + " | spread | band per profile | measured | error per profile | 1-min load |",
        "|---|---|" + "---:|" * len(profiles) + "---:|---|---:|---|---:|",
    ]
    for r in rows:
        bands = ", ".join(f"-{m:.1%}/+{p:.1%}" for m, p in r.bands)
        errors = ", ".join(f"{e:+.1%}" for e in r.errors())
        lines.append(
            f"| {r.shape.label} | {r.shape.sync} | "
            + " | ".join(f"{p:,.0f}" for p in r.predicted)
            + f" | {r.spread:.1%} | {bands} | {r.measured:,.0f} | {errors} | {r.load:.1f} |"
        )
    lines += [
        "",
        "### What each profile measured",
        "",
        "The figures the predictions come from, per profile: the stage time of every layer on "
        "local-1 summed, the server's time per row, the loopback link, and the share of the "
        "cores others held. The one that moves between profiles is what moved the predictions.",
        "",
        "| profile | layers on local-1, ms per batch | server time per row, us "
        "| loopback, Gbit/s | cores held by others |",
        "|---|---:|---:|---:|---:|",
    ]
    for k, p in enumerate(profiles):
        inst = p.instance
        row_s = inst.parameter_server.row_s.get("local-1", 0.0) if inst.parameter_server \
            else 0.0
        compute = sum(layer.compute_s["local-1"] for layer in inst.layers)
        lines.append(f"| {k + 1} | {compute * 1e3:.3f} | {row_s * 1e6:.3f} "
                     f"| {inst.resource('local-1').network_gbps:.1f} | {p.held:.0%} |")
    write_keeping_notes(out, lines)


if __name__ == "__main__":
    sys.exit(main())
