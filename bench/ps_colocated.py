"""A co-located parameter-server shard in its stage's process against a shard process of its
own (issue 24.2), side by side with `heterps run`:

    .venv/bin/python bench/ps_colocated.py [--size small] [--batch-size 1000] [--steps 60]
                                           [--rounds 3]

For each shape (CTR-DNN, one shard, a v1 plan of one-unit stages bound to this CPU: 1 stage
async, 2 stages async, 2 stages bsp), every round runs `heterps run --json` twice, with the
shard in-process (HETERPS_PS_IN_PROCESS=1) and as its own process (=0), alternating which
goes first; the figure is each round's ratio of the two steady throughputs (in-process /
own process), their median, and the load average at the start and the end. Ratios, not
absolute numbers, are what a shared machine can measure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chain_plans import write_chain_plan  # noqa: E402

SHAPES = (("1 stage, async", 1, "async"), ("2 stages, async", 2, "async"),
          ("2 stages, bsp", 2, "bsp"))


def plan_file(stages: int, size: str, folder: Path) -> Path:
    return write_chain_plan("ctr_dnn", size, stages, 1000, folder / f"plan-{stages}.json")


def run_once(plan: Path, args: argparse.Namespace, sync: str, in_process: bool) -> float:
    command = [sys.executable, "-m", "heterps_core", "run", str(plan), "--model", "ctr_dnn",
               "--size", args.size, "--batch-size", str(args.batch_size), "--steps",
               str(args.steps), "--sync", sync, "--ps-shards", "1", "--json"]
    env = dict(os.environ, HETERPS_PS_IN_PROCESS="1" if in_process else "0")
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    summary = json.loads(done.stdout)
    shard = next(p for p in summary["processes"] if p["role"] == "ps shard 0")
    assert shard["in_process"] == in_process, shard
    return float(summary["throughput"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="heterps-colocated-") as folder:
        for label, stages, sync in SHAPES:
            plan = plan_file(stages, args.size, Path(folder))
            ratios, pairs = [], []
            for r in range(args.rounds):
                order = (True, False) if r % 2 == 0 else (False, True)
                got = {mode: run_once(plan, args, sync, mode) for mode in order}
                pairs.append((got[True], got[False]))
                ratios.append(got[True] / got[False])
            text = ", ".join(f"{a:,.0f}/{b:,.0f}" for a, b in pairs)
            print(f"{label}: in-process/own process samples/s {text}; ratios "
                  f"{', '.join(f'{x:.2f}' for x in ratios)}; median "
                  f"{statistics.median(ratios):.2f}; load {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
