"""Real processes for the fault tests: a Redis of our own, Celery workers, the server.

Every process is started in its own session so a test can kill it (or its whole group)
for real and the teardown leaves nothing behind. Short lease and sweep intervals
(FAST_TIMING) make recovery take seconds.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FAST_TIMING = {"HETERPS_WORK_LEASE_S": "3", "HETERPS_WORK_HEARTBEAT_S": "0.5",
               "HETERPS_WORK_SWEEP_S": "1", "HETERPS_WORK_REQUEUE_S": "3"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def subprocess_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The fault kinds' settings, fast lease timing, our own var dir."""
    env = os.environ | FAST_TIMING | {
        "DJANGO_SETTINGS_MODULE": "fault_settings",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]),
        "HETERPS_VAR_DIR": str(tmp),
        "HETERPS_SECURE": "0",
    }
    return env | extra


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the test process dies, so a pytest killed
    by a timeout (no teardown runs) leaves no worker or redis-server behind. Linux only."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


STARTED: list[Proc] = []  # every Proc of this test process, for the last-resort sweep


class Proc:
    """A process in its own session (so its whole group can be killed: pool children,
    the runtime's children), its output in a log file."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.command = command
        self.env = env
        self.popen = subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("ab"),
                                      stderr=subprocess.STDOUT, start_new_session=True,
                                      preexec_fn=_die_with_parent)
        STARTED.append(self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def kill_group(self) -> None:
        """SIGKILL the group: the process and everything it started (a prefork pool child
        whose main process was killed by the test is still in it). Never raises."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def full_output(self) -> str:
        return self.log.read_text(errors="replace")


def kill_all(procs: list[Proc]) -> None:
    """Kill every group in `procs`; one that fails does not stop the others."""
    for proc in procs:
        proc.kill_group()


atexit.register(kill_all, STARTED)  # a test that failed before its teardown ran


class OwnRedis:
    """redis-server on a free port, no persistence: a restart loses every queued message."""

    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.tmp = tmp
        self.proc: Proc | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/2"

    def start(self) -> None:
        self.proc = Proc(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no", "--daemonize", "no",
                          "--dir", str(self.tmp)], dict(os.environ), self.tmp / "redis.log")
        wait_until(self._answers, 10, "redis-server to answer", every_s=0.1)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill_group()

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False


def start_worker(env: dict[str, str], queues: str, log: Path, pool: str = "prefork",
                 concurrency: int = 1, plain: bool = False) -> Proc:
    """A `celery -A workers worker`; `plain`: without `--without-gossip --without-mingle`,
    as an operator might start it (the app must be safe without them)."""
    flags = [] if plain else ["--without-gossip", "--without-mingle"]
    command = [sys.executable, "-m", "celery", "-A", "workers", "worker", "--pool", pool,
               "--concurrency", str(concurrency), "--queues", queues,
               "--hostname", f"{queues.replace(',', '+')}-{time.monotonic_ns()}@%h",
               *flags, "--loglevel", "INFO"]
    return Proc(command, env, log)


def worker_ready(worker: Proc) -> bool:
    assert worker.alive(), worker.output()
    return " ready." in worker.output()


def start_server(env: dict[str, str], port: int, log: Path, *extra: str) -> Proc:
    command = [sys.executable, "manage.py", "up", "--port", str(port), "--no-demo", *extra]
    return Proc(command, env, log)


def server_up(server: Proc, port: int) -> bool:
    assert server.alive(), server.output()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def api(port: int, token: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, method=method,
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from webapp.projects.services import create_project
user, _ = get_user_model().objects.get_or_create(username="faulty")
project = create_project(user, "Faults")
print("SETUP", Token.objects.get_or_create(user=user)[0].key, project.pk)
"""


def setup_user_and_project(env: dict[str, str]) -> tuple[str, int]:
    """Migrate the subprocess' database; a user with a token and a project of theirs."""
    manage(env, "migrate", "--verbosity", "0")
    out = manage(env, "shell", "-c", SETUP_SCRIPT)
    line = next(x for x in out.splitlines() if x.startswith("SETUP "))
    _, token, project = line.split()
    return token, int(project)


def live(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def pytest_database_url() -> str:
    """pytest-django's test database (not the real one) as a DATABASE_URL for the server and
    workers a test starts."""
    from django.db import connection

    db = connection.settings_dict
    return (f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:"
            f"{db['PORT'] or 5432}/{db['NAME']}")
