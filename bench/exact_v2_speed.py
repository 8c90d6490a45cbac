"""Time `exact` under cost model v2 on one generated instance.

    .venv/bin/python bench/exact_v2_speed.py LAYERS async|bsp MICRO_BATCHES [SEED]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from heterps_core.generate import random_instance
from heterps_core.schedulers.exact import exact_plan

if __name__ == "__main__":
    n, sync, micro = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    instance = random_instance(seed, n, 6).as_v2(sync, micro)
    start = time.perf_counter()
    plan = exact_plan(instance)
    print(f"{n} layers x 6, {sync}, M={micro}, seed {seed}: {time.perf_counter() - start:.2f} s, "
          f"feasible {plan.feasible}, ${plan.cost_per_hour}/h, {len(plan.stages)} stages")
