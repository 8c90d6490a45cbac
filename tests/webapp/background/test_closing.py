"""Issue 25.8, in process: once a process shuts down (`leases.close_local`, the embedded
server's first signal) it starts no work: a delivery leaves its record queued for the next
start, and an attempt that registers after the stop went round is told to stop at once.

The real-signal versions are in tests/workers/test_shutdown.py."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from webapp.background import leases, services
from webapp.background.context import StopReason, WorkContext
from webapp.background.models import Status, Work

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workers"))
import fault_kind  # noqa: F401  (registers the fault-test kinds)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def closing(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test process "shuts down"; the flag is this test's own (others run after it)."""
    monkeypatch.setattr(leases, "_CLOSING", threading.Event())
    leases.close_local()


def _queued(personas: Any) -> Work:
    return Work.objects.create(project=personas.project, kind="fault-steps",
                               params={"steps": 2, "step_s": 0.01, "children": 0},
                               created_by=personas.member)


def test_a_delivery_while_closing_leaves_the_record_queued(personas: Any, closing: None) -> None:
    work = _queued(personas)
    services.run_work(work.pk)
    work.refresh_from_db()
    assert (work.status, work.attempt, work.started_at, work.lease_owner) == (
        Status.QUEUED, 0, None, "")


def test_the_same_delivery_runs_when_the_process_is_not_closing(personas: Any) -> None:
    work = _queued(personas)
    services.run_work(work.pk)
    work.refresh_from_db()
    assert work.status == Status.SUCCEEDED, work.error


def test_an_attempt_registering_after_the_stop_is_told_to_stop(
    personas: Any, closing: None
) -> None:
    ctx = WorkContext(work_id=987_654, project_id=personas.project.pk, user_id=None, params={})
    with leases.Heartbeat(ctx, leases.new_owner()):
        assert ctx.cancelled() and ctx.stop_reason == StopReason.SHUTDOWN
