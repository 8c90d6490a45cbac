"""Job processes forked from the template (runtime/template.py), on real processes: a job's
ranks are the template's children and train as before; a forked process gets its own
environment, working directory, log and command line, reports its exit code and signal, is
stopped through its pidfd, and dies with the template, which dies with its launcher."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

from heterps_core import processes
from heterps_core.runtime import template
from heterps_core.runtime.launcher import Launcher, RunConfig
from heterps_core.runtime.reference import train_plain

SYNC_TOLERANCE = 1e-5

JOB_MODULE = '''
import os, sys, time

def main(argv):
    what = argv[0]
    if what == "report":
        print("env", os.environ.get("HETERPS_TEST_VALUE"), "cwd", os.getcwd(),
              "argv", " ".join(sys.argv[1:]), "ppid", os.getppid(), flush=True)
        return 7
    if what == "exit":
        sys.exit(int(argv[1]))
    if what == "fail":
        raise RuntimeError("the job module failed")
    print("sleeping", flush=True)
    time.sleep(600)
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def threads_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.fixture
def job_env(tmp_path: Path) -> dict[str, str]:
    """A job module importable only through the request's PYTHONPATH."""
    (tmp_path / "template_job.py").write_text(textwrap.dedent(JOB_MODULE))
    return processes.child_env({"PYTHONPATH": str(tmp_path), "HETERPS_TEST_VALUE": "42"})


@pytest.fixture
def forks():
    started = template.Template()
    yield started
    started.close()


def ended(pid: int) -> bool:
    """Gone, or a zombie (an orphan's reaper may be slow or absent in a container)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_forked_process_gets_its_env_cwd_log_and_command_line(
    forks, job_env, tmp_path, monkeypatch
):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with open(tmp_path / "rank.log", "wb") as log:
        proc = forks.spawn("template_job", ["report", "--store", "h:1"], job_env, log)
    assert proc.wait(30) == 7
    said = (tmp_path / "rank.log").read_text()
    assert f"env 42 cwd {work} argv report --store h:1 ppid {forks._proc.pid}" in said, said
    assert proc.pid != forks._proc.pid and proc.poll() == 7


def test_exit_codes_and_failures_are_reported_like_a_popen(forks, job_env, tmp_path):
    with open(tmp_path / "rank.log", "wb") as log:
        exits = forks.spawn("template_job", ["exit", "3"], job_env, log)
        fails = forks.spawn("template_job", ["fail"], job_env, log)
    assert exits.wait(30) == 3
    assert fails.wait(30) == 1
    assert "RuntimeError: the job module failed" in (tmp_path / "rank.log").read_text()


def test_signals_reach_the_process_and_its_end_is_reported(forks, job_env, tmp_path):
    with open(tmp_path / "rank.log", "wb") as log:
        slow = [forks.spawn("template_job", ["sleep", f"--rank {i}"], job_env, log)
                for i in range(3)]
    wait_for(lambda: (tmp_path / "rank.log").read_text().count("sleeping") == 3)
    # The command line `ps` shows is the job's, as for a fresh interpreter.
    cmdline = Path(f"/proc/{slow[0].pid}/cmdline").read_bytes().decode()
    assert "-m template_job sleep --rank 0" in cmdline, cmdline
    with pytest.raises(subprocess.TimeoutExpired):
        slow[0].wait(0.2)
    slow[0].terminate()
    assert slow[0].wait(30) == -signal.SIGTERM
    os.kill(slow[1].pid, signal.SIGKILL)  # as a test or the OOM killer would
    assert slow[1].wait(30) == -signal.SIGKILL
    processes.stop_all([slow[2]], grace_s=5.0)  # what the launcher does on cancel
    assert slow[2].returncode == -signal.SIGTERM
    slow[2].kill()  # already reaped: the pidfd makes this a no-op, never a stranger's kill


def test_the_template_is_one_thread_and_its_children_die_with_it(forks, job_env, tmp_path):
    with open(tmp_path / "rank.log", "wb") as log:
        child = forks.spawn("template_job", ["sleep"], job_env, log)
    assert parent_of(child.pid) == forks._proc.pid != os.getpid()
    assert threads_of(forks._proc.pid) == 1
    maps = Path(f"/proc/{forks._proc.pid}/maps").read_text()
    assert "libtorch_cpu" in maps  # torch is imported there, once
    os.kill(forks._proc.pid, signal.SIGKILL)
    assert child.wait(30) == -signal.SIGKILL
    assert ended(child.pid)
    with pytest.raises(template.TemplateError, match="template process ended"):
        forks.spawn("template_job", ["sleep"], job_env, None)


def test_closing_the_template_ends_the_children_still_running(forks, job_env, tmp_path):
    with open(tmp_path / "rank.log", "wb") as log:
        child = forks.spawn("template_job", ["sleep"], job_env, log)
    wait_for(lambda: "sleeping" in (tmp_path / "rank.log").read_text())
    forks.close()
    assert child.returncode == -signal.SIGKILL
    assert not Path(f"/proc/{child.pid}").exists()


def test_the_template_dies_with_its_launcher(tmp_path: Path) -> None:
    # A launcher process that starts a template and a job process, then is SIGKILLed.
    script = textwrap.dedent(f"""
        import os, sys
        from heterps_core import processes
        from heterps_core.runtime import template
        t = template.Template()
        env = processes.child_env({{"PYTHONPATH": {str(tmp_path)!r}}})
        # The job's own output goes to its log: on stdout its "sleeping" could come first
        # (CI, stop 31).
        child = t.spawn("template_job", ["sleep"], env, open({str(tmp_path / "job.log")!r}, "wb"))
        print(t._proc.pid, child.pid, flush=True)
        sys.stdin.read()
    """)
    (tmp_path / "template_job.py").write_text(textwrap.dedent(JOB_MODULE))
    launcher = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=tmp_path.joinpath("err").open("w"),
                                text=True, env=processes.child_env())
    assert launcher.stdout is not None
    line = launcher.stdout.readline()
    assert line, tmp_path.joinpath("err").read_text()
    server, child = (int(x) for x in line.split())
    launcher.kill()
    launcher.wait()
    for pid in (server, child):
        wait_for(lambda pid=pid: ended(pid), timeout=30)


def test_without_the_switch_jobs_start_as_fresh_interpreters(monkeypatch, job_env):
    monkeypatch.setenv(template.ENV_SWITCH, "0")
    starter = template.Starter()
    proc = starter.start("template_job", ["exit", "5"], job_env, None)
    assert isinstance(proc, subprocess.Popen)
    assert proc.wait(60) == 5
    starter.close()


@pytest.mark.slow
def test_a_job_runs_on_processes_forked_from_the_template(jobs, tmp_path) -> None:
    plan = jobs.plan_for(["cpu", "cpu-b", "cpu-b", "cpu-b"], [1, 1])
    launcher = Launcher(RunConfig(plan=plan, train=jobs.settings(8), log_dir=str(tmp_path)))
    launcher.start()
    parents = {parent_of(pid) for pid in launcher.pids.values()}
    result = launcher.wait()
    # One template forked every process of the job (the shard is served in stage 1's).
    assert len(parents) == 1 and os.getpid() not in parents
    plain = train_plain(jobs.settings(8))
    assert torch.allclose(torch.tensor(result.losses), torch.tensor(plain.losses),
                          rtol=SYNC_TOLERANCE, atol=SYNC_TOLERANCE)
    own = sorted(f"rank{rank.rank}.log" for rank in launcher.spec.processes)
    assert own == ["rank0.log", "rank1.log"]
    assert sorted(p.name for p in tmp_path.glob("rank*.log")) == own


def test_a_prestarted_template_is_the_one_the_next_starter_forks_from(job_env, tmp_path):
    template.prestart()
    warm = template._warm
    assert warm is not None
    starter = template.Starter()
    try:
        with open(tmp_path / "rank.log", "wb") as log:
            proc = starter.start("template_job", ["sleep"], job_env, log)
        assert parent_of(proc.pid) == warm._proc.pid
        assert template._warm is None  # taken: one launcher per template
    finally:
        starter.close()
    assert proc.returncode == -signal.SIGKILL  # closing ended what was left


def test_keep_warm_starts_a_template_only_on_the_main_thread() -> None:
    # A template dies with the thread that started it: one started on a short-lived thread
    # would be an import of torch for nothing.
    side = threading.Thread(target=template.keep_warm)
    side.start()
    side.join()
    assert template._warm is None
    template.keep_warm()
    warm = template.take()
    try:
        assert warm.alive and threads_of(warm._proc.pid) >= 1
    finally:
        warm.close()
