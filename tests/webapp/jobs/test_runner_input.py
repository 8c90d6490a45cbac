"""Runners own their input: the approve API nests the runner's fields under `options`
(errors name them there), the old flat body still works, the registry answers unknown
names on the `runner` field, and the model never reaches up to the registry."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from webapp.jobs import runners
from webapp.jobs.inputs.base import OptionsForm
from webapp.jobs.models import Job
from webapp.jobs.pages.base import RunnerPage

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]


def _post(client: Any, body: dict[str, Any]) -> Any:
    return client.post("/api/jobs/", body, content_type="application/json")


def test_the_api_takes_the_pipeline_runners_fields_under_options(
    login: Any, personas: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    body = {"plan_result": plan_result.pk, "steps": 8, "runner": "pipeline"}
    bad = _post(client, dict(body, options={"binding": {"cpu-b": "tpu:0"}}))
    assert bad.status_code == 400 and "tpu" in bad.json()["options.binding.cpu-b"][0]
    wrong_type = _post(client, dict(body, options={"micro_batches": "many"}))
    assert wrong_type.status_code == 400 and "options.micro_batches" in wrong_type.json()
    made = _post(client, dict(body, options={"sync_mode": "async",
                                             "binding": {"cpu-b": "cpu:2"}}))
    assert made.status_code == 201, made.json()
    job = made.json()
    assert (job["sync_mode"], job["binding"], job["options"]["sync"]) == (
        "async", {"cpu-b": "cpu:2"}, "async")


def test_the_api_takes_the_data_parallel_runners_fields_under_options(
    login: Any, personas: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    body = {"plan_result": plan_result.pk, "steps": 20, "runner": "dataparallel"}
    options = {"sync_mode": "local_sgd", "sync_params": {"period": 0},
               "dataparallel": {"workers": 2, "slowdowns": [1, 3]}}
    bad = _post(client, dict(body, options=options))
    assert bad.status_code == 400
    assert "must be >= 1" in bad.json()["options.mode.local_sgd.period"][0]
    slow = _post(client, dict(body, options=dict(
        options, sync_params={"period": 5}, dataparallel={"workers": 2, "slowdowns": "1,x"})))
    assert slow.status_code == 400 and "options.dataparallel.slowdowns" in slow.json()
    made = _post(client, dict(body, options=dict(options, sync_params={"period": 5})))
    assert made.status_code == 201, made.json()
    job = made.json()
    assert (job["sync_mode"], job["sync_params"], job["options"]["sync"]) == (
        "local_sgd", {"period": 5}, "local_sgd")


def test_the_old_flat_body_still_works_and_keeps_its_names(
    login: Any, personas: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    body = {"plan_result": plan_result.pk, "steps": 8}
    bad = _post(client, dict(body, binding={"cpu-b": "tpu:0"}))
    assert bad.status_code == 400 and "binding.cpu-b" in bad.json()
    made = _post(client, dict(body, sync_mode="async", binding={"cpu-b": "cpu:2"}))
    assert made.status_code == 201
    assert Job.objects.get(pk=made.json()["id"]).options["binding"] == {"cpu-b": "cpu:2"}


def test_a_field_given_both_flat_and_under_options_is_refused(
    login: Any, personas: Any, plan_result: Any
) -> None:
    both = _post(login(personas.member), {"plan_result": plan_result.pk, "steps": 8,
                                           "sync_mode": "bsp", "options": {"sync_mode": "async"}})
    assert both.status_code == 400 and "options.sync_mode" in both.json()["sync_mode"][0]
    assert not Job.objects.exists()


def test_an_unknown_runner_is_a_field_error(
    login: Any, personas: Any, plan_result: Any
) -> None:
    with pytest.raises(ValidationError) as caught:
        runners.get("gossip")
    assert "pipeline, dataparallel" in caught.value.message_dict["runner"][0]
    bad = _post(login(personas.member), {"plan_result": plan_result.pk, "steps": 8,
                                          "runner": "gossip"})
    assert bad.status_code == 400 and "runner" in bad.json()


def test_every_runner_declares_its_input_and_page() -> None:
    for runner in runners.RUNNERS:
        assert issubclass(runner.options_form, OptionsForm), runner.name
        assert runner.options_serializer().fields, runner.name
        assert isinstance(runner.page, RunnerPage), runner.name
    assert [name for name, _ in runners.choices()] == ["pipeline", "dataparallel"]


def test_the_model_never_imports_the_runner_registry() -> None:
    """The registry sits above the models (not even a function-level import)."""
    tree = ast.parse((ROOT / "webapp/jobs/models.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    named = {f"{node.module}.{alias.name}" for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert not any(m and m.startswith("webapp.jobs.runners") for m in imported | named)
