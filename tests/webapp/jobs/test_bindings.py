"""A binding that cannot work is refused on approval, with the reason on its field: more
threads than this machine has cores, a blank target, a `remote` type no agent could serve."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError

from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


def _refused(personas: Any, source: Any, binding: dict[str, str]) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        services.approve(personas.member, source, RunOptions(steps=8, binding=binding))
    assert not Job.objects.exists()
    return caught.value.message_dict


def test_more_threads_than_cores_are_refused(personas: Any, source: Any) -> None:
    cores = os.cpu_count() or 1
    problems = _refused(personas, source, {"cpu": f"cpu:{cores + 1}"})
    assert f"this machine has {cores} cores" in problems["binding.cpu"][0]
    job = services.approve(personas.member, source,
                           RunOptions(steps=8, binding={"cpu": f"cpu:{cores}"}))
    assert job.binding == {"cpu": f"cpu:{cores}"}


def test_a_blank_target_is_refused_not_left_out(personas: Any, source: Any) -> None:
    problems = _refused(personas, source, {"cpu": "cpu", "cpu-b": " "})
    assert "choose where it runs" in problems["binding.cpu-b"][0]


def test_remote_needs_an_agent_that_could_serve_it(personas: Any, source: Any) -> None:
    problems = _refused(personas, source, {"cpu-b": "remote"})
    if settings.MODE.embedded_worker:
        assert "embedded mode" in problems["binding.cpu-b"][0]
    else:  # production shape: no worker consumes this test's agent queue
        assert "no worker consumes its queue heterps.res.cpu-b" in problems["binding.cpu-b"][0]


def test_the_form_marks_the_binding_field(login: Any, personas: Any, plan_result: Any) -> None:
    bad = login(personas.member).post(f"/jobs/approve/{plan_result.pk}/", {
        "steps": 8, "sync_mode": "bsp", "lr": 0.05, "bind_cpu": "cpu", "bind_cpu-b": ""})
    assert bad.status_code == 400
    assert "choose where it runs" in bad.context["form"].errors["bind_cpu-b"][0]
