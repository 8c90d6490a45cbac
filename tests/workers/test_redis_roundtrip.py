"""Production mode: tasks go through real Redis to a separate `celery -A workers worker`.

Runs against REDIS_URL (CI) or a Redis on 127.0.0.1:6379; skipped when neither answers.
Each test uses its own queue, so a worker left running elsewhere cannot take its tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from celery import Celery
from celery.result import allow_join_result
from django.db import transaction

from webapp import environment

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "webapp/catalogue/demo/tiny-ctr.json"
pytestmark = [pytest.mark.production, pytest.mark.slow]


def _client(redis_url: str) -> Celery:
    options = environment.celery_settings({"REDIS_URL": redis_url})
    app = Celery("heterps-test-client")
    app.conf.update({k.removeprefix("CELERY_").lower(): v for k, v in options.items()})
    return app


def _start_worker(env: dict[str, str], queue: str, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "workers", "worker", "--pool", "solo",
               "--queues", queue, "--hostname", f"{queue}@%h", "--without-gossip",
               "--without-mingle", "--loglevel", "INFO"]
    # Its own session: the teardown kills the whole group, pool children included.
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture
def queue() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


def _stop(worker: subprocess.Popen[bytes]) -> None:
    """Warm shutdown; what is left of the group after 15 s is killed."""
    worker.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        worker.wait(15)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(worker.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        worker.wait(10)


@pytest.fixture
def redis_worker(redis_url: str, queue: str, tmp_path: Path) -> Iterator[tuple[Celery, str]]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env |= {"REDIS_URL": redis_url, "HETERPS_VAR_DIR": str(tmp_path)}
    worker = _start_worker(env, queue, tmp_path / "worker.log")
    yield _client(redis_url), queue
    _stop(worker)


def test_a_task_round_trips_through_redis(redis_worker: tuple[Celery, str]) -> None:
    app, queue = redis_worker
    payload = uuid.uuid4().hex
    result = app.send_task("heterps.ping", args=[payload], queue=queue)
    # An embedded worker started earlier in this process marks joins as blocking; this
    # test is a client, not a task.
    with allow_join_result():
        answer = result.get(timeout=120)
    assert answer["echo"] == payload and answer["worker"]
    assert result.backend.__class__.__name__ == "RedisBackend"


def _events_until_finished(layer: Any, channel: str, timeout_s: float) -> list[dict[str, Any]]:
    """Work states received on `channel`, up to the first finished one (one event loop)."""

    async def collect() -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        async with asyncio.timeout(timeout_s):
            while not (events and events[-1]["finished"]):
                events.append((await layer.receive(channel))["work"])
        return events

    return async_to_sync(collect)()


def _test_database_url() -> str:
    from django.db import connection

    db = connection.settings_dict  # pytest-django's test database, not the real one
    return (f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:"
            f"{db['PORT'] or 5432}/{db['NAME']}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")),
    reason="the full production chain needs DATABASE_URL and REDIS_URL (as in CI)",
)
def test_work_runs_in_a_worker_process_and_progress_arrives_through_redis(
    personas: Any, queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """start_work -> Redis -> worker process -> PostgreSQL + channels-redis -> our client."""
    from channels.layers import channel_layers

    from webapp.background import services
    from webapp.background.evaluate_kind import EvaluateKind
    from webapp.background.models import Status

    env = os.environ | {"DATABASE_URL": _test_database_url(), "HETERPS_VAR_DIR": str(tmp_path)}
    worker = _start_worker(env, queue, tmp_path / "worker.log")
    try:
        layer = channel_layers.make_backend("default")  # fresh: no state from other loops
        channel = async_to_sync(layer.new_channel)()
        monkeypatch.setattr(EvaluateKind, "queue", queue)  # route to this test's worker only
        with transaction.atomic():
            work = services.start_work(personas.member, personas.project, "evaluate",
                                       {"instance": json.loads(TINY.read_text())})
            async_to_sync(layer.group_add)(services.group_name(work.pk), channel)
        events = _events_until_finished(layer, channel, timeout_s=120)  # worker start-up too
    finally:
        _stop(worker)
    work.refresh_from_db()
    assert work.status == Status.SUCCEEDED, (tmp_path / "worker.log").read_text()
    assert [p["cost_per_hour"] for p in work.result["plans"]] == pytest.approx([4.2, 12.0])
    assert events[0]["status"] == Status.RUNNING
    assert [e["progress"] for e in events] == [0.0, 0.5, 1.0, 1.0]
    assert events[-1]["status"] == Status.SUCCEEDED
