"""Production shape of profiling on the resources' own machines: a real `celery -A workers
worker` consuming one resource type's agent queue, on PostgreSQL + Redis.

The worker plays a machine of type A (its queue `heterps.res.<A>`); type B has no worker.
The worker's operator allowed no model factories, so a factory model cannot load there (an
agent that fails). The profile work itself runs in this process, as the server's worker
would run it. Names are unique per run, so a worker left running elsewhere takes nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from heterps_core.agents import RUNTIME_TASK as TASK_NAME
from heterps_core.agents import queue_for
from webapp.background.broker import serving
from webapp.background.models import Status, Work
from webapp.background.services import cancel_work, run_work
from webapp.catalogue.models import ResourceType
from webapp.modelzoo.services import add_factory_model, add_zoo_model
from webapp.planning.services import build_request_instance, create_cluster
from webapp.profiling import services
from webapp.profiling.models import LayerResult, Origin, ResourceProfile

REPO = Path(__file__).resolve().parents[2]
FACTORY = "heterps_core.zoo.examples.tabular:tabular_ctr"
pytestmark = [
    pytest.mark.production,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),  # the worker process reads what we commit
    pytest.mark.skipif(
        not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")),
        reason="agents need the production shape: DATABASE_URL and REDIS_URL",
    ),
]


@dataclass
class Machine:
    served: str  # the type whose queue the worker consumes
    unserved: str  # a type no worker serves
    log: Path


def _test_database_url() -> str:
    db = connection.settings_dict  # pytest-django's test database, not the real one
    return (f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:"
            f"{db['PORT'] or 5432}/{db['NAME']}")


@pytest.fixture(scope="module")
def machine(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory,
            live_processes: Callable[[str], list[int]]) -> Iterator[Machine]:
    """One worker machine of type A, shared by the module (a worker takes seconds to start)."""
    tag = uuid.uuid4().hex[:8]
    served, unserved = f"cpu-a-{tag}", f"cpu-b-{tag}"
    home = tmp_path_factory.mktemp("agent")
    env = os.environ | {"DATABASE_URL": _test_database_url(), "HETERPS_VAR_DIR": str(home),
                        "HETERPS_MODEL_FACTORIES": "", "HETERPS_PROFILE_THREADS": "1"}
    command = [sys.executable, "-m", "celery", "-A", "workers", "worker", "--concurrency", "1",
               "--queues", queue_for(served), "--hostname", f"{served}@%h",
               "--without-gossip", "--without-mingle", "--loglevel", "INFO"]
    log = home / "worker.log"
    # Its own session: the teardown kills the whole group, pool children included.
    worker = subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("wb"),
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while serving([served]) != {served}:
            assert worker.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the agent worker did not start in 120 s"
            time.sleep(1)
        yield Machine(served, unserved, log)
    finally:
        worker.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(20)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)
    assert live_processes(f"{served}@") == []


@pytest.fixture
def types(personas: Any, machine: Machine) -> list[ResourceType]:
    return [ResourceType.objects.create(project=personas.project, name=name, kind="cpu",
                                        price_per_hour=1.0 + i, count=4, memory_gb=64,
                                        network_gbps=10)
            for i, name in enumerate((machine.served, machine.unserved))]


def _origins(run_id: int) -> dict[str, ResourceProfile]:
    return {o.resource: o for o in ResourceProfile.objects.filter(run_id=run_id)}


def _in_thread(work_id: int) -> threading.Thread:
    def body() -> None:
        try:
            run_work(work_id)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def _message_while_running(work_id: int, text: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        message = Work.objects.get(pk=work_id).message
        if text in message:
            return message
        time.sleep(0.1)
    raise AssertionError(f"the work never said {text!r} within {timeout_s} s")


def _occupy(machine: Machine, seconds: float) -> None:
    """Keep the machine's one pool process busy: an agent for a job whose coordinator never
    answers retries for its join timeout. Its control channel still answers `serving`."""
    from workers.app import app

    app.send_task(TASK_NAME, args=["127.0.0.1:1", [machine.served], None, "", seconds],
                  queue=queue_for(machine.served), expires=seconds + 60)


def test_a_served_type_is_measured_on_its_agent_and_the_other_keeps_the_roofline(
    personas: Any, machine: Machine, types: list[ResourceType], login: Any, settings: Any
) -> None:
    settings.SECURE_SSL_REDIRECT = False  # production mode redirects; the client speaks http
    model = add_zoo_model(personas.member, personas.project, "ctr_dnn", "tiny")
    run = services.start_profile(personas.member, model, batch_size=32, repeats=1)
    run_work(run.work.pk)
    work = Work.objects.get(pk=run.work.pk)
    assert work.status == Status.SUCCEEDED, work.error
    origins = _origins(run.pk)
    agent = origins[machine.served]
    assert agent.origin == Origin.MEASURED, (agent.note, machine.log.read_text()[-3000:])
    assert agent.host.startswith(f"{machine.served}@")
    assert agent.device.startswith("cpu (1 threads") and agent.measured_at is not None
    rows = LayerResult.objects.filter(run=run, resource=machine.served)
    assert {r.source for r in rows} == {"measured"}
    assert {r.device for r in rows} == {f"{agent.host}: {agent.device}"}
    other = origins[machine.unserved]
    assert other.origin == Origin.ESTIMATED
    assert other.note == (f"estimated (roofline) - no worker serves {machine.unserved} "
                          f"(queue {queue_for(machine.unserved)})")
    assert {r.source for r in LayerResult.objects.filter(run=run, resource=machine.unserved)
            } == {"estimated"}

    cluster = create_cluster(personas.member, personas.project, "both", types)
    _, provenance, _ = build_request_instance(model, cluster, 32, 100.0, None)
    seconds = {r.layer: r.seconds for r in rows}
    for figure in provenance:
        served = figure["resource"] == machine.served
        assert figure["source"] == ("measured" if served else "estimated")
        if served:
            assert figure["seconds"] == seconds[figure["layer"]]

    page = login(personas.viewer).get(f"/profiling/{run.pk}/").content.decode()
    assert f"measured on {agent.host} ({agent.device}) at" in page
    assert other.note in page
    assert login(personas.outsider).get(f"/profiling/{run.pk}/").status_code == 404


def test_an_agent_that_cannot_load_the_model_is_a_labelled_fallback(
    personas: Any, machine: Machine, types: list[ResourceType]
) -> None:
    model = add_factory_model(personas.member, personas.project, FACTORY)  # allowed here
    run = services.start_profile(personas.member, model, batch_size=16, repeats=1)
    run_work(run.work.pk)
    work = Work.objects.get(pk=run.work.pk)
    assert work.status == Status.SUCCEEDED, work.error
    agent = _origins(run.pk)[machine.served]
    assert agent.origin == Origin.ESTIMATED
    assert agent.note.startswith(f"estimated (roofline) - the agent on {machine.served}@")
    assert f"failed: factory: '{FACTORY}' is not on this server's allow-list" in agent.note
    assert {r.source for r in LayerResult.objects.filter(run=run, resource=machine.served)
            } == {"estimated"}


def _profile_with_a_busy_agent(
    personas: Any, machine: Machine, settings: Any, timeout_s: float
) -> tuple[Any, threading.Thread, str]:
    """A profile started while the served type's agent is kept busy, running in a thread
    until it waits for that agent: (the run, the thread, the work's waiting message)."""
    settings.PROFILE_AGENT_TIMEOUT_S = timeout_s
    model = add_zoo_model(personas.member, personas.project, "ctr_dnn", "tiny")
    run = services.start_profile(personas.member, model, batch_size=32, repeats=1)
    _occupy(machine, 20)
    thread = _in_thread(run.work.pk)
    return run, thread, _message_while_running(run.work.pk, "waiting for agents", 60)


def test_a_busy_agent_times_out_to_the_roofline_with_a_note(
    personas: Any, machine: Machine, types: list[ResourceType], settings: Any
) -> None:
    run, thread, message = _profile_with_a_busy_agent(personas, machine, settings, 3)
    assert f"{machine.served} ({queue_for(machine.served)})" in message
    thread.join(60)
    assert not thread.is_alive()
    work = Work.objects.get(pk=run.work.pk)
    assert work.status == Status.SUCCEEDED, work.error
    agent = _origins(run.pk)[machine.served]
    assert agent.origin == Origin.ESTIMATED
    assert agent.note == (f"estimated (roofline) - no answer from an agent on "
                          f"{queue_for(machine.served)} within 3 s (setting "
                          "PROFILE_AGENT_TIMEOUT_S)")


def test_cancelling_the_profile_stops_waiting_for_its_agent(
    personas: Any, machine: Machine, types: list[ResourceType], settings: Any
) -> None:
    run, thread, _ = _profile_with_a_busy_agent(personas, machine, settings, 300)
    cancel_work(personas.member, Work.objects.get(pk=run.work.pk))
    start = time.monotonic()
    thread.join(30)
    assert not thread.is_alive() and time.monotonic() - start < 15
    assert Work.objects.get(pk=run.work.pk).status == Status.CANCELLED
    agent = _origins(run.pk)[machine.served]
    assert agent.origin == Origin.ESTIMATED
    assert agent.note == ("estimated (roofline) - the profile was cancelled while waiting "
                          "for its agent")
