"""The launcher's own CPU time, and input made ahead vs inline (issue 24 items 4 and 5).

    .venv/bin/python bench/launcher_cpu.py [--steps 300] [--rounds 2] [--old LAUNCHER.py]

Runs a 2-stage async plan of CTR-DNN small (batch 1,000, Adam) in this process through the
launcher and reports, per round and alternated side by side (a loaded machine shifts every
number, not the ratios):
- the launcher's CPU seconds over the run (this process's `getrusage`, which counts none of
  its children: the template and the job processes), as a share of a core, without and with
  a cancel hook (a CLI run; the web app's, which ticks every `launcher.TICK_S`);
  `--old` adds the same for another launcher.py (e.g. `git show REV:heterps_core/runtime/
  launcher.py > /tmp/old_launcher.py`);
- the run's steady throughput with mini-batches made inline (HETERPS_INPUT_AHEAD=0) and
  ahead on the input thread (the default).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chain_plans import chain_plan
from heterps_core.plan import Plan
from heterps_core.runtime import launcher as current
from heterps_core.runtime.datasource import AHEAD_ENV
from heterps_core.runtime.launcher import RunConfig
from heterps_core.runtime.spec import TrainSettings

MODEL, SIZE, BATCH = "ctr_dnn", "small", 1000


def two_stage_plan() -> Plan:
    """Embedding / dense stages, one unit each."""
    return chain_plan(MODEL, SIZE, 2, BATCH)


def load_launcher(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("old_launcher", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one_run(module: ModuleType, config: RunConfig, cancel: Callable[[], bool] | None
            ) -> tuple[float, float, float]:
    """(launcher CPU s, wall s, samples/s) of one run through `module`'s Launcher."""
    wall0, cpu0 = time.monotonic(), cpu_s()
    result = module.Launcher(config, cancel=cancel).run()
    return cpu_s() - cpu0, time.monotonic() - wall0, result.throughput


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--old", help="another launcher.py to compare with")
    args = parser.parse_args()
    train = TrainSettings(model=MODEL, size=SIZE, steps=args.steps, batch_size=BATCH,
                          sync="async", micro_batches=1, optimizer="adam", lr=0.001)
    config = RunConfig(plan=two_stage_plan(), train=train)
    launchers = {"new": current} | ({"old": load_launcher(args.old)} if args.old else {})
    never = threading.Event()
    print(f"load at start: {os.getloadavg()}", flush=True)
    for r in range(args.rounds):
        for name, module in launchers.items():
            for hook_name, hook in (("no hook", None), ("cancel hook", never.is_set)):
                cpu, wall, _ = one_run(module, config, hook)
                print(f"round {r} launcher {name} ({hook_name}): {cpu:.2f} CPU s over "
                      f"{wall:.1f} s = {cpu / wall:.3f} of a core", flush=True)
        for ahead in ("0", "2"):
            os.environ[AHEAD_ENV] = ahead
            _, wall, rate = one_run(current, config, None)
            print(f"round {r} input ahead={ahead}: {rate:.0f} samples/s ({wall:.1f} s)",
                  flush=True)
        os.environ.pop(AHEAD_ENV)
    print(f"load at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
