"""`manage.py up --processes N`: N Daphne processes on one port (production shape), all
stopped by one SIGTERM, none left behind when the first is killed; refused without the
Redis channel layer (a second process would not see the websockets' events)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workers"))
from fault_helpers import (
    REPO,
    OwnRedis,
    free_port,
    live,
    server_up,
    start_server,
    subprocess_env,
)

pytestmark = [pytest.mark.slow]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"daphne" in cmdline:
            found.append(int(entry.name))
    return found


def _database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    return (f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:"
            f"{db['PORT'] or 5432}/{db['NAME']}")


@pytest.mark.skipif(not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")),
                    reason="several server processes need PostgreSQL and Redis")
@pytest.mark.django_db(transaction=True)
def test_processes_share_the_port_and_stop_together(tmp_path: Path,
                                                    live_processes: Any) -> None:
    redis = OwnRedis(tmp_path)
    env = subprocess_env(tmp_path, DATABASE_URL=_database_url(), REDIS_URL=redis.url,
                         DJANGO_SETTINGS_MODULE="webapp.settings")
    port = free_port()
    try:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            server = start_server(env, port, tmp_path / "server.log", "--processes", "2")
            wait_until(lambda s=server: server_up(s, port), 120, "the server")
            others = wait_until(lambda s=server: _children(s.pid), 30, "the second process")
            assert len(others) == 1
            for _ in range(20):  # a new connection each: the kernel spreads them
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
                    assert r.status == 200
            server.signal(sig)
            start = time.monotonic()
            server.popen.wait(30)
            # SIGTERM: the first stops the others; SIGKILL: they die with it (PDEATHSIG).
            wait_until(lambda o=others: live(o) == [], 10, "the other server process to exit")
            gone_s = time.monotonic() - start
            print(f"{signal.Signals(sig).name}: all server processes gone in {gone_s:.1f} s")
            assert gone_s < 10
            server.kill_group()
    finally:
        redis.kill()
    assert live_processes(f"--port {port} ") == []


def test_more_than_one_process_needs_the_redis_channel_layer(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env |= {"HETERPS_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    result = subprocess.run([sys.executable, "manage.py", "up", "--processes", "2",
                             "--port", str(free_port())], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "--processes above 1 needs the Redis channel layer" in result.stderr
