"""Ablations of the from-scratch policy-gradient trainer: which part makes it learn.

    .venv/bin/python bench/rl_ablation.py                # writes docs/benchmarks/rl-ablation.md
    .venv/bin/python bench/rl_ablation.py --budget-s 5 --out -   # a smoke run

Every configuration trains a fresh policy (random weights, no pretrained start, no exact
labels) on each instance for the same wall-clock budget with the same seed; the number is the
gap of the best plan the policy itself sampled (policy only: no local search, no fallback) to
the exact optimum. Instances: generated, seed 0, 16/32/48 layers x 4/6 resources, with and
without caps, keeping those whose optimum is heterogeneous. `old` is the trainer before
issue 18: clipped terminal reward, no dynamic mask, no self-imitation.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heterps_core.generate import random_instance  # noqa: E402
from heterps_core.rl.policy import LayerPolicy, PolicyConfig  # noqa: E402
from heterps_core.rl.settings import RLTrainConfig as TrainConfig  # noqa: E402
from heterps_core.rl.training import train_on_instance  # noqa: E402
from heterps_core.schedulers.exact import exact_plan  # noqa: E402

CONFIGS: dict[str, tuple[str, dict[str, object], float]] = {
    # name: (what it is, TrainConfig changes, initial prior gain)
    "default": ("per-step cost-to-go + self-imitation 0.1 + dynamic mask (shipped)", {}, 0.0),
    "self-imitation 0.5": ("default with a 5x stronger self-imitation term",
                           {"self_imitation": 0.5}, 0.0),
    "no self-imitation": ("default without the self-imitation term",
                          {"self_imitation": 0.0}, 0.0),
    "log reward": ("terminal -log(cost/reference) instead of per-step cost-to-go",
                   {"reward": "log"}, 0.0),
    "no dynamic mask": ("default, sampling from the static mask only",
                        {"dynamic_mask": False}, 0.0),
    "prior gain 2": ("default, logits start at -2 x relative increment (learned after)",
                     {}, 2.0),
    "old": ("clipped terminal reward, static mask, no self-imitation (before issue 18)",
            {"reward": "clipped", "self_imitation": 0.0, "dynamic_mask": False}, 0.0),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget-s", type=float, default=15.0)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "rl-ablation.md"))
    args = parser.parse_args()
    names = args.configs.split(",")
    candidates = [random_instance(0, n, r, caps=caps)
                  for n in (16, 32, 48) for r in (4, 6) for caps in (False, True)]
    plans = {inst.name: exact_plan(inst) for inst in candidates}
    instances = [i for i in candidates if len(set(plans[i.name].assignment or ())) > 1]
    optima = {inst.name: plans[inst.name].cost_per_hour for inst in instances}
    dropped = [i.name for i in candidates if i not in instances]
    start = time.perf_counter()
    load_before = os.getloadavg()
    gaps: dict[str, dict[str, float | None]] = {n: {} for n in names}
    updates: dict[str, list[int]] = {n: [] for n in names}
    for inst in instances:
        for name in names:
            _, changes, gain = CONFIGS[name]
            config = TrainConfig(budget_s=args.budget_s, patience=None, **changes)  # type: ignore[arg-type]
            result = train_on_instance(inst, config, seed=0,
                                       policy=LayerPolicy(PolicyConfig(prior_gain=gain)))
            best = result.problem.best_outcome
            opt = optima[inst.name]
            gaps[name][inst.name] = None if best is None or best.cost is None else (
                best.cost / opt - 1)  # type: ignore[operator]
            updates[name].append(result.updates)
            print(f"{inst.name} {name}: {gaps[name][inst.name]} ({result.updates} updates)",
                  file=sys.stderr, flush=True)
    lines = [
        "# RL trainer ablations (from scratch, policy only)",
        "",
        f"Written by `bench/rl_ablation.py` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; "
        f"command `.venv/bin/python bench/rl_ablation.py {' '.join(sys.argv[1:])}`; whole run "
        f"{time.perf_counter() - start:.0f} s. {os.cpu_count()} cores shared with ~6 other "
        "engineers' jobs; torch on 1 thread; load average (1/5/15 min) "
        f"{'/'.join(f'{x:.1f}' for x in load_before)} at the start and "
        f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())} at the end.",
        "",
        f"Each cell: gap of the best plan the policy sampled within {args.budget_s:g} s of "
        "training from random weights (seed 0) to the exact optimum; no search, no fallback. "
        "Budgets are wall-clock, so a loaded machine buys fewer updates (median updates per "
        "run in the last column).",
        "",
        f"Dropped (homogeneous optimum): {', '.join(dropped) or 'none'}.",
        "",
        "| configuration | what | " + " | ".join(i.name.removeprefix("random-s0-")
                                                 for i in instances)
        + " | median | updates |",
        "|---|---|" + "---|" * (len(instances) + 2),
    ]
    for name in names:
        row = gaps[name]
        cells = ["inf." if row[i.name] is None else f"{row[i.name]:.1%}" for i in instances]
        finite = [g for g in row.values() if g is not None]
        infeasible = len(row) - len(finite)
        med = statistics.median([g if g is not None else float("inf") for g in row.values()])
        lines.append(f"| {name} | {CONFIGS[name][0]} | " + " | ".join(cells)
                     + f" | {med:.1%}{f' ({infeasible} inf.)' if infeasible else ''} "
                     f"| {statistics.median(updates[name]):.0f} |")
    text = "\n".join(lines) + "\n"
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
