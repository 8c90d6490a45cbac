"""bench/speed.py end to end on the tiny CTR-DNN: real `heterps run` and `heterps train-dp`
commands, the plain loop, the ceiling, py-spy where installed, and the report it writes."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from tests import benches


def load_bench() -> ModuleType:
    return benches.load_bench("speed")


@pytest.mark.slow
def test_the_speed_bench_measures_every_kind_of_case_and_writes_its_report(tmp_path) -> None:
    speed = load_bench()
    out = tmp_path / "speed.md"
    code = speed.main(["--size", "tiny", "--steps", "6", "--rounds", "1", "--optimizers",
                       "sgd", "--cases", "plain2,async1,defaults,dp", "--out", str(out),
                       # long enough for py-spy to find every child process
                       "--profile-steps", "300"])
    assert code == 0
    text = out.read_text()
    assert "with `python bench/speed.py --size tiny" in text
    assert re.search(r"Load average at start [\d.]+ [\d.]+ [\d.]+, at end [\d.]+ ", text)
    rows = dict(re.findall(r"^\| (.+?) \| ([\d,]+) \| [\d.]+ \| [\d.]+ \|$", text, re.M))
    for label in ("plain loop, 2 threads", "2 stages, async, 1 micro-batch",
                  "2 stages, the plan's defaults (no flags)", "`train-dp`, 2 workers + the server"):
        assert int(rows[label].replace(",", "")) > 0, label
    ceiling = re.search(r"Ceiling: .*\*\*([\d,]+) samples/s\*\*", text)
    assert ceiling and int(ceiling.group(1).replace(",", "")) > 0
    # A goal of a case that ran has its ratio and verdict; the others say not measured.
    goals = {(g[0], g[1]): g[2] for g in re.findall(
        r"^\| (.+?) \| (adam|sgd) \| .+? \| [\d.]+ \| (.+?) \| (?:yes|no) \|$", text, re.M)}
    assert re.fullmatch(r"\d+\.\d\d", goals[("2 stages, async", "sgd")])
    assert re.fullmatch(r"\d+\.\d\d", goals[("the plan's defaults", "sgd")])
    assert goals[("1 stage, `cpu:2`", "sgd")] == goals[("2 stages, async", "adam")] \
        == "not measured"
    assert "## What is left" in text
    if speed.py_spy() is None:
        assert "Skipped: py-spy is not installed" in text
    else:
        # Each of our processes by its role, and a share of wall time for its functions.
        assert "**`heterps run` (the launcher)**" in text
        assert re.search(r"\*\*stage 1 replica 0 \(rank \d\)\*\*", text)
        assert re.search(r"\*\*stage 2 replica 0 \(rank \d\)\*\*\n  - .+: .*\d+%", text)
        # Which of train-dp's processes py-spy attaches to in time is py-spy's luck (CI,
        # stops 29 and 31: a worker missed); how each is named is the unit tests' below.
        dp = text.split("### `train-dp`", 1)[1].split("## What is left", 1)[0]
        assert re.search(r"- \*\*`train-dp` (server \(the parameter server\)|worker \d)\*\*\n"
                         r"  - .+: .*\d+%", dp)


def test_profiles_are_shares_of_each_threads_samples_named_by_the_heartbeats_rank() -> None:
    speed = load_bench()
    run = 'process 10:"python -m heterps_core run plan.json"'
    template = f'{run};process 11:"python -m heterps_core.runtime.template_process 4 --"'
    worker = f'{template};process 12:"python -m heterps_core.runtime.worker --rank 1"'
    kept = f'{template};process 13:"python -m heterps_core.runtime.template_process 4 --"'
    raw = "\n".join([
        f"{run};thread (0x1): MainThread;main (heterps_core/cli/run.py:1);"
        "wait (threading.py:3) 50",
        f"{template};thread (0x5): MainThread;take_requests "
        "(heterps_core/runtime/template_process.py:83) 50",
        f"{worker};thread (0x2): MainThread;run (heterps_core/runtime/stage.py:9);"
        "backward (torch/_tensor.py:1) 40",
        f"{worker};thread (0x2): MainThread;run (heterps_core/runtime/stage.py:9) 10",
        f"{worker};thread (0x6): heartbeat-1;_run (heterps_core/runtime/liveness.py:5) 50",
        # A thread that lived a moment: all its samples work, yet it did little.
        f"{worker};thread (0x7): Thread-3;<module> (heterps_core/zoo/data.py:1) 5",
        f"{kept};thread (0x3): MainThread;serve (heterps_core/runtime/ps.py:5) 20",
        f"{kept};thread (0x3): MainThread;serve (heterps_core/runtime/ps.py:5);"
        "select (selectors.py:4) 30",
        f"{kept};thread (0x4): heartbeat-0;_run (heterps_core/runtime/liveness.py:5) 50",
    ])
    procs = {p.name: p for p in speed.reduce_profile(raw, {0: "ps shard 0", 1: "stage 1"})}
    # The template is left out; the shard still had the template's title: its heartbeat
    # thread names its rank.
    assert set(procs) == {"`heterps run` (the launcher)", "stage 1 (rank 1)",
                          "ps shard 0 (rank 0)"}
    stage = procs["stage 1 (rank 1)"]
    # The most samples not waiting first, not the largest share of them.
    assert [t.name for t in stage.threads] == ["MainThread", "Thread-3", "heartbeat-1"]
    assert (stage.busiest().samples, stage.busiest().busy) == (50, 50)
    assert speed.working(stage.threads[1]) == 1.0
    assert stage.busiest().shares == [
        ("run (runtime/stage.py) > backward (torch/_tensor.py)", 0.8),
        ("run (runtime/stage.py)", 0.2)]
    shard = procs["ps shard 0 (rank 0)"].busiest()
    assert shard.shares == [("serve (runtime/ps.py) > select (selectors.py)", 0.6),
                            ("serve (runtime/ps.py)", 0.4)]
    assert speed.working(shard) == pytest.approx(0.4)
    assert (shard.samples, shard.busy) == (50, 20)


def test_a_gap_is_explained_by_the_thread_that_worked_most_not_one_that_lived_a_moment() -> None:
    # stop 33's report named a train-dp worker's import thread (5 samples, all of them
    # working) as the busiest, over the workers' main threads.
    speed = load_bench()
    worker = ('process 5:"";process {pid}:'
              '"python -m heterps_core.dataparallel.process.worker h:1 {i}"')
    raw = "\n".join([
        'process 5:"";thread (0x1): MainThread;serve (heterps_core/dataparallel/x.py:1);'
        "select (selectors.py:4) 90",
        f"{worker.format(pid=7, i=0)};thread (0x2): thread;<module> "
        "(heterps_core/dataparallel/modes/base.py:1) 5",
        f"{worker.format(pid=7, i=0)};thread (0x3): MainThread;step "
        "(heterps_core/dataparallel/worker.py:2) 40",
        f"{worker.format(pid=8, i=1)};thread (0x4): MainThread;step "
        "(heterps_core/dataparallel/worker.py:2) 60",
    ])
    processes = speed.reduce_profile(raw, {}, dp=True)
    profiles = {"dp": speed.Profiled("adam", 1.0, processes)}
    goal = next(g for g in speed.GOALS if g.case == "dp")
    assert speed.hint(goal, profiles) == (
        " Busiest thread (profiled with adam): `train-dp` worker 2, MainThread: "
        "step (dataparallel/worker.py) 100%.")


def test_a_train_dp_profile_names_server_and_workers_even_when_the_roots_title_is_empty() -> None:
    # py-spy read the root's command line as "" in CI (stop 29): the command's kind, not
    # its title, says the root is the server; a worker is known by its own command line.
    speed = load_bench()
    worker = 'process 7:"python -m heterps_core.dataparallel.process.worker 127.0.0.1:4 {}"'
    raw = "\n".join([
        'process 5:"";thread (0x1): MainThread;serve (heterps_core/dataparallel/x.py:1) 10',
        f'process 5:"";{worker.format(1)};thread (0x2): MainThread;'
        "step (heterps_core/dataparallel/y.py:2) 10",
        f'process 5:"";{worker.format(0).replace("7:", "8:")};thread (0x3): MainThread;'
        "step (heterps_core/dataparallel/y.py:2) 10",
    ])
    names = {p.name for p in speed.reduce_profile(raw, {}, dp=True)}
    assert names == {"`train-dp` server (the parameter server)", "`train-dp` worker 1",
                     "`train-dp` worker 2"}
    assert "`heterps run` (the launcher)" in {p.name for p in speed.reduce_profile(raw, {})}


def test_a_report_is_rendered_again_from_a_runs_log() -> None:
    """`--from-log`: the rates, job peaks and ceiling a run printed, both line forms."""
    speed = load_bench()
    log = "\n".join([
        "round 1: adam plain2: 20,000 samples/s (load 1.50) plain loop, 2 threads",
        "round 1: adam prod: 15,000 samples/s (load 1.60, job 0.75 GB) 2 stages, ...",
        "round 2: adam plain2: 22,000 samples/s (load 1.40) plain loop, 2 threads",
        "round 2: adam prod: 11,000 samples/s (load 1.30, job 0.80 GB) 2 stages, ...",
        "round 1: sgd plain loop, 2 threads: 30,000 samples/s (load 2.00)",  # before 19:00
        "ceiling (dense forward + backward, 2 threads): 44,764 samples/s",
        "profiled 1 stage, `cpu:2`",
    ])
    m, top, loads = speed.from_log(log)
    assert m.rates[("plain2", "adam")] == [20000.0, 22000.0]
    assert m.rates[("plain2", "sgd")] == [30000.0]
    assert m.paired("prod", "adam") == pytest.approx((0.75 + 0.5) / 2)
    assert m.job_bytes[("prod", "adam")] == 800_000_000
    assert top == 44764.0 and loads == [1.5, 1.6, 1.4, 1.3, 2.0]


def test_a_new_report_keeps_the_hand_written_reading_of_the_one_it_replaces(tmp_path) -> None:
    speed = load_bench()
    out = tmp_path / "speed.md"
    speed.write_report(out, "# figures 1\n")
    assert out.read_text() == "# figures 1\n"  # nothing to keep yet
    reading = f"{speed.READING}\n## Reading\nthe dense stage caps it\n"
    out.write_text(f"# figures 1\n\n{reading}")
    speed.write_report(out, "# figures 2\n")
    assert out.read_text() == f"# figures 2\n\n{reading}"
