"""Issue 25 item 6: a refusal inside running work (a ValidationError a kind raises: a model
reference the server refuses, a number out of range) is recorded as its validation message,
field first, not as "internal error (ValidationError: ...)", and is no crash in the log."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from webapp.background import services
from webapp.background.models import Status, Work
from webapp.modelzoo.models import RegisteredModel
from webapp.profiling.services import start_profile

pytestmark = pytest.mark.django_db
TINY = Path(__file__).resolve().parents[3] / "webapp/catalogue/demo/tiny-ctr.json"


def _failed(login: Any, user: Any, work_id: int) -> dict[str, Any]:
    answer = login(user).get(f"/api/work/{work_id}/")
    assert answer.status_code == 200, answer.content
    data = answer.json()
    assert data["status"] == Status.FAILED, data
    return data


def test_a_refused_model_reference_fails_with_its_message(
    personas: Any, login: Any, zoo_model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    run = start_profile(personas.member, zoo_model, batch_size=8, repeats=1)
    # The model's code reference no longer names anything this server may build.
    RegisteredModel.objects.filter(pk=zoo_model.pk).update(zoo_name="gone_model")
    with caplog.at_level(logging.INFO):
        services.run_work(run.work_id)
    error = _failed(login, personas.viewer, run.work_id)["error"]
    assert error.startswith("zoo_name: 'gone_model' is neither a zoo model"), error
    assert "internal error" not in error and "ValidationError" not in error
    assert "{" not in error and "[" not in error  # the message, not a dict's repr
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_an_out_of_range_number_fails_with_its_message(
    personas: Any, login: Any, zoo_model: Any, settings: Any
) -> None:
    run = start_profile(personas.member, zoo_model, batch_size=8, repeats=1)
    settings.PROFILE_AGENT_TIMEOUT_S = 10**9
    services.run_work(run.work_id)
    error = _failed(login, personas.member, run.work_id)["error"]
    assert error.startswith("PROFILE_AGENT_TIMEOUT_S: must be in (0, "), error
    assert error.endswith("seconds, got 1000000000"), error
    assert "internal error" not in error


def test_a_bug_is_still_an_internal_error_with_its_trace_in_the_log(
    personas: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # A record whose params never went through clean_params: the kind trips over them.
    instance = json.loads(TINY.read_text())
    work = Work.objects.create(project=personas.project, kind="evaluate",
                               params={"instance": instance, "assignments": 5},
                               created_by=personas.member)
    services.run_work(work.pk)
    work.refresh_from_db()
    assert work.status == Status.FAILED
    assert work.error.startswith("internal error ("), work.error
    assert any(r.levelno == logging.ERROR and r.exc_info for r in caplog.records)
