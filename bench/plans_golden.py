"""Every scheduler's plan (and evaluate, pareto, explain, heterogeneity, band) as canonical JSON.

Run before and after a change to the cost model or the solvers, then diff the two folders:
the plans must be byte for byte the same. Solve times are dropped, and the times in RL's
note replaced by T (they are measurements);
every stochastic scheduler is seeded and runs on a work bound (no CPU budget), so the output
depends on the code only.

    python bench/plans_golden.py OUT_DIR [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heterps_core.costmodel import evaluate  # noqa: E402
from heterps_core.explain import explain  # noqa: E402
from heterps_core.frontier import default_targets, frontier, frontier_to_dict  # noqa: E402
from heterps_core.generate import random_instance  # noqa: E402
from heterps_core.heterogeneity import compare, stage_bounds  # noqa: E402
from heterps_core.instance import Instance  # noqa: E402
from heterps_core.rl.fastcost import AssignmentCosts  # noqa: E402
from heterps_core.schedulers import create, get, names  # noqa: E402
from heterps_core.throughput_band import throughput_band  # noqa: E402

SPEC = Path("/work/shared/spec/examples")
DATA = ROOT / "tests/heterps_core/schedulers/data"
TIMES = {"solve_time_s", "cpu_s", "wall_s"}
# RL's note says how long its updates took: measurements too
TIMED = re.compile(r"[0-9]+(\.[0-9]+)? (CPU-s|s wall)")
SLOW = {"rl": {"updates": 3}}  # work-bounded: a few policy updates


def _v2_raw(seed: int) -> dict[str, Any]:
    """A small random v2 instance (the generator of tests/.../test_exact_v2.py)."""
    rng = random.Random(seed)
    n_layers, n_res = rng.randint(2, 5), rng.randint(2, 3)
    resources = [
        {"name": f"r{r}", "kind": "cpu" if r == 0 else "gpu",
         "price_per_hour": round(rng.uniform(0.5, 4), 2), "count": 3 + seed % 3,
         "memory_gb": rng.choice([16, 64]), "network_gbps": rng.choice([10, 25])}
        for r in range(n_res)
    ]
    layers = []
    for i in range(n_layers):
        sparse = i < max(1, n_layers // 3)
        layers.append({
            "name": f"l{i}", "kind": "embedding" if sparse else "dense",
            "compute_s": {f"r{r}": rng.uniform(0.002, 0.03) for r in range(n_res)
                          if r == 0 or rng.random() > 0.15},
            "compute_spread": {"r0": 0.05},
            "output_mb": rng.uniform(0.1, 3), "sync_mb": 0.0 if sparse else rng.uniform(0.1, 5),
            "memory_gb": rng.uniform(1, 40) if sparse else rng.uniform(0.1, 2),
            "shardable": sparse,
            "sparse_pull_mb": rng.uniform(0.1, 3) if sparse else 0.0,
            "sparse_push_mb": rng.uniform(0.1, 3) if sparse else 0.0,
            "sparse_rows": rng.uniform(1000, 30000) if sparse else 0.0,
        })
    data: dict[str, Any] = {
        "version": 2, "name": f"v2-{seed}", "batch_size": 1000,
        "throughput_target": rng.uniform(20000, 90000), "input_mb": 1.0, "samples": 1e8,
        "resources": resources, "layers": layers,
        "sync": "async" if seed % 4 < 2 else "bsp", "micro_batches": rng.choice([1, 2, 4]),
    }
    if rng.random() < 0.7:
        data["parameter_server"] = {"hosts": ["r0"] + (["r1"] if rng.random() < 0.5 else []),
                                    "row_s": {"r0": 1e-7}}
    return data


def _with_spread(inst: Instance) -> Instance:
    data = inst.to_dict()
    for layer in data["layers"]:
        layer["compute_spread"] = {r: 0.03 for r in layer["compute_s"]}
    return Instance.from_dict(data)


def instances(quick: bool) -> dict[str, Instance]:
    found: dict[str, Instance] = {}
    for folder in (SPEC, DATA):
        for path in sorted(folder.glob("*.json")):
            if path.name == "expected.json":
                continue
            found[f"{folder.name}-{path.stem}"] = Instance.load(path)
    for key in [k for k in found if found[k].version == 1]:
        found[f"{key}-async-m1"] = found[key].as_v2("async", 1)
        found[f"{key}-bsp-m4"] = found[key].as_v2("bsp", 4)
    for seed in range(3 if quick else 6):
        caps = bool(seed % 2)
        inst = random_instance(seed, 5 + seed, 3, caps=caps)
        found[f"gen-{seed}"] = _with_spread(inst)
        found[f"gen-{seed}-bsp-m2"] = inst.as_v2("bsp", 2)
    for seed in range(6 if quick else 16):
        found[f"v2-{seed}"] = Instance.from_dict(_v2_raw(seed))
    return found


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, str):
        return TIMED.sub(r"T \2", value)
    return value


def _safe(fn: Any) -> Any:
    try:
        return _clean(fn())
    except Exception as exc:  # the error text is part of the behaviour
        return {"error": f"{type(exc).__name__}: {exc}"}


def record(inst: Instance) -> dict[str, Any]:
    out: dict[str, Any] = {"plans": {}, "evaluate": {}}
    exact_plan = None
    for name in names():
        cls = get(name)
        refused = cls.refusal(inst)
        if refused:
            out["plans"][name] = {"refused": refused}
            continue
        sched = create(name, seed=7, **SLOW.get(name, {}))
        plan = _safe(lambda s=sched: s.plan(inst).to_dict())
        out["plans"][name] = plan
        if name == "exact":
            exact_plan = sched.plan(inst)
    names_ = inst.resource_names
    n = len(inst.layers)
    rng = random.Random(len(names_) * 100 + n)
    assignments = [[r] * n for r in names_]
    assignments += [[rng.choice(names_) for _ in range(n)] for _ in range(4)]
    costs = AssignmentCosts(inst)
    index = {r: i for i, r in enumerate(names_)}
    for a in assignments:
        key = ",".join(a)
        out["evaluate"][key] = _safe(lambda a=a: evaluate(inst, a).to_dict())
        outcome = costs.outcome([index[r] for r in a])
        out["evaluate"][key + " fast"] = [outcome.cost, outcome.throughput, outcome.reason]
    out["fast_additive"] = costs.additive
    targets = default_targets(inst, points=5)
    out["pareto"] = _safe(lambda: frontier_to_dict(inst, frontier(inst, targets)))
    if exact_plan is not None and exact_plan.feasible:
        plan = exact_plan
        out["explain"] = _safe(lambda: explain(inst, plan).to_dict())
        out["heterogeneity"] = _safe(lambda: compare(inst, plan).to_dict())
        out["stage_bounds"] = _safe(lambda: [repr(b) for b in stage_bounds(inst, plan)])
        band = throughput_band(inst, plan)
        out["band"] = None if band is None else _safe(band.to_dict)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    for key, inst in instances(args.quick).items():
        text = json.dumps(record(inst), indent=1, sort_keys=True)
        (folder / f"{key}.json").write_text(text + "\n")
        print(key, flush=True)


if __name__ == "__main__":
    main()
