"""Short work never waits behind long work (issue 17): with a long run holding the long
queue's only worker, an exact plan asked for finishes in seconds, in both modes, with real
workers (embedded: the in-process worker threads; production: two `celery -A workers
worker` processes on Redis). Meanwhile a second long run says where it waits."""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from tests.waiting import wait_until
from webapp.background import services
from webapp.background.models import Status, Work
from webapp.planning import plan_kind
from webapp.planning import services as planning

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workers"))
import fault_kind  # registers the fault-test kinds

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PLAN_S = 15.0  # "seconds": the exact plan itself takes well under one


@pytest.fixture
def queues(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Queues of this test only, so no other worker (or stale message) takes part."""
    tag = uuid.uuid4().hex[:8]
    interactive, long = f"interactive-{tag}", f"long-{tag}"
    monkeypatch.setattr(plan_kind.PlanKind, "queue", interactive)
    monkeypatch.setattr(fault_kind.FaultSteps, "queue", long)
    return interactive, long


@pytest.fixture
def embedded_workers(queues: tuple[str, str]) -> Iterator[None]:
    if not django_settings.MODE.embedded_worker:
        pytest.skip("the embedded worker needs the in-memory broker (no REDIS_URL)")
    from workers import embedded

    worker = embedded.start(concurrency=1, queues=queues)
    yield
    from webapp.background import leases

    leases.stop_local()
    worker.stop()


@pytest.fixture
def process_workers(queues: tuple[str, str], tmp_path: Path) -> Iterator[None]:
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        pytest.skip("the production workers need DATABASE_URL and REDIS_URL")
    from django.db import connection
    from fault_helpers import start_worker, subprocess_env, worker_ready

    db = connection.settings_dict
    url = (f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:"
           f"{db['PORT'] or 5432}/{db['NAME']}")
    env = subprocess_env(tmp_path, DATABASE_URL=url)
    workers = [start_worker(env, queue, tmp_path / f"{queue}.log") for queue in queues]
    for worker in workers:
        wait_until(lambda w=worker: worker_ready(w), 90, "a worker to be ready")
    yield
    for worker in workers:
        worker.kill_group()


def _exact_plan_during_a_long_run(personas: Any, profiled: Any, cluster: Any) -> None:
    long_params = {"steps": 600, "step_s": 0.05}
    running = services.start_work(personas.member, personas.project, "fault-steps", long_params)
    wait_until(lambda: Work.objects.get(pk=running.pk).status == Status.RUNNING, 90,
               "the long work to run")
    waiting = services.start_work(personas.member, personas.project, "fault-steps", long_params)

    start = time.monotonic()
    request = planning.start_planning(personas.member, profiled.model, cluster, 50_000.0,
                                      ["exact"])
    wait_until(lambda: Work.objects.get(pk=request.work_id).finished, 60, "the plan to finish")
    took = time.monotonic() - start
    plan = Work.objects.get(pk=request.work_id)
    print(f"exact plan during a long run: {took:.2f} s")
    assert plan.status == Status.SUCCEEDED, plan.error
    assert took < PLAN_S
    assert Work.objects.get(pk=running.pk).status == Status.RUNNING  # still going
    state = services.state(Work.objects.get(pk=waiting.pk))
    assert state["status"] == Status.QUEUED
    assert state["waiting"]["position"] == 1 and state["waiting"]["running"] == 1
    assert state["message"].endswith("#1 in line, behind 1 running (fault-steps).")
    for work in (running, waiting):
        services.cancel_work(personas.member, Work.objects.get(pk=work.pk))
    wait_until(lambda: Work.objects.get(pk=running.pk).finished, 30, "the long work to finish")


def test_embedded_an_exact_plan_does_not_wait_behind_a_long_run(
    personas: Any, profiled: Any, cluster: Any, embedded_workers: None
) -> None:
    _exact_plan_during_a_long_run(personas, profiled, cluster)


def test_production_an_exact_plan_does_not_wait_behind_a_long_run(
    personas: Any, profiled: Any, cluster: Any, process_workers: None
) -> None:
    _exact_plan_during_a_long_run(personas, profiled, cluster)
