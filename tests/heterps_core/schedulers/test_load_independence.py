"""Same plan, same RL result with and without two CPU hogs (issue 21 item 7).

Budgets count work or the solving thread's CPU seconds (heterps_core/budget.py), so two busy
loops in other processes must not change what `exact` with a budget, the RL scheduler with
`--updates` and `plan --pretrained` return. Each case runs once on the machine as it is, then
again with the hogs running (real processes, killed whatever happens). Where the OS allows it
the hogs and the solving thread share one core, so the load is real on a machine of any size:
the solve then gets about a third of that core, which each test checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from heterps_core.budget import Stopwatch
from heterps_core.cli import main
from heterps_core.generate import random_instance, stress_instance
from heterps_core.rl.planner import RLResult, plan_with_rl

# Seconds each, with CPU hogs of their own: kept out of `make test-fast`'s parallel lane.
pytestmark = pytest.mark.slow
HOGS = 2


def _cpu_s(pid: int) -> float | None:
    """CPU seconds a process has used (Linux /proc), None where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def cpu_hogs(n: int = HOGS) -> Iterator[bool]:
    """`n` processes that spin until the block ends, pinned with the calling thread to one
    core where the OS allows it; yields whether they share that core."""
    hogs: list[subprocess.Popen[bytes]] = []
    pin = hasattr(os, "sched_setaffinity")
    before = os.sched_getaffinity(0) if pin else set()
    try:
        for _ in range(n):
            hogs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        if pin:
            core = {min(before)}
            for hog in hogs:
                os.sched_setaffinity(hog.pid, core)
            os.sched_setaffinity(0, core)  # this thread: the one that solves
        time.sleep(0.3)  # let them reach their loops
        yield pin
        for hog in hogs:
            assert hog.poll() is None, "a CPU hog died during the run"
            used = _cpu_s(hog.pid)
            assert used is None or used > 0.2, f"a CPU hog used only {used} CPU-s"
    finally:
        if pin:
            os.sched_setaffinity(0, before)
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(timeout=10)


def _loaded(watch: Stopwatch, shared: bool) -> None:
    """The hogs took most of the core: the solve got well under all of it."""
    if shared:
        assert watch.cpu_s < 0.75 * watch.wall_s, (
            f"{watch.cpu_s:.2f} CPU-s in {watch.wall_s:.2f} s: the hogs did not load the core")


def _plan_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _same_plan(quiet: dict[str, Any], loaded: dict[str, Any]) -> None:
    for key in ("feasible", "assignment", "cost_per_hour", "throughput", "notes"):
        assert quiet.get(key) == loaded.get(key), key


def test_exact_with_a_budget_gives_the_same_plan_under_two_cpu_hogs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ~0.7 CPU-s to prove on a quiet machine: a budget of 2 CPU-s proves it under load too,
    # where a wall-clock budget ran out when the cores were shared (issue 21).
    path = tmp_path / "stress.json"
    stress_instance(1, 256, 8).save(path)
    argv = ["plan", str(path), "--scheduler", "exact", "--budget-s", "2", "--json",
            "--no-progress"]
    quiet = _plan_json(capsys, argv)
    with cpu_hogs() as shared:
        watch = Stopwatch()
        loaded = _plan_json(capsys, argv)
        _loaded(watch, shared)
    assert quiet["feasible"] and not quiet.get("notes"), quiet.get("notes")
    _same_plan(quiet, loaded)
    # the wall clock would have run out: at a third of a core, 2 s buy ~0.7 CPU-s
    if shared:
        assert watch.wall_s > 1.2 * watch.cpu_s


def _rl_outcome(result: RLResult) -> tuple[Any, ...]:
    assert result.final is not None
    final = result.final
    return (result.mode, result.updates, result.policy_best, result.polished,
            result.search_evaluations, final.assignment, final.cost_per_hour,
            final.throughput, [n for n in final.notes if "CPU-s" not in n])


def test_rl_with_updates_gives_the_same_result_under_two_cpu_hogs() -> None:
    instance = random_instance(0, 8, 3, caps=True)
    quiet = plan_with_rl(instance, seed=0, updates=20)
    with cpu_hogs() as shared:
        watch = Stopwatch()
        loaded = plan_with_rl(instance, seed=0, updates=20)
        _loaded(watch, shared)
    assert quiet.updates > 0 and quiet.polished is not None
    assert _rl_outcome(quiet) == _rl_outcome(loaded)


def test_plan_pretrained_runs_its_whole_local_search_under_two_cpu_hogs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = random_instance(0, 48, 6)
    path = tmp_path / "gen48.json"
    instance.save(path)
    argv = ["plan", str(path), "--scheduler", "rl", "--pretrained", "--json", "--no-progress"]
    quiet = _plan_json(capsys, argv)
    with cpu_hogs() as shared:
        watch = Stopwatch()
        loaded = _plan_json(capsys, argv)
        _loaded(watch, shared)
        result = plan_with_rl(instance, seed=0, pretrained=True)
    _same_plan(quiet, loaded)
    # the local search ran (on this instance it improves the policy's best sample), and ran
    # as far under load as the CLI's quiet run did
    assert result.polished is not None and result.policy_best is not None
    assert result.polished.cost is not None and result.policy_best.cost is not None
    assert result.polished.cost < result.policy_best.cost
    assert result.final is not None and result.final.assignment == tuple(quiet["assignment"])
