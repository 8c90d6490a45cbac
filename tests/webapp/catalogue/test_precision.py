"""Precision per resource type (issue 21): blank follows the hardware entry (tf32 on
Ampere and later, fp32 on V100/T4), amp is a choice, and the estimates and pages follow it."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from heterps_core.profiler.result import ModelProfile
from webapp.catalogue import services
from webapp.catalogue.models import ResourceType

pytestmark = pytest.mark.django_db


def _gpu(personas: Any, template: str, name: str, precision: str = "") -> ResourceType:
    return services.create(personas.member, personas.project,
                           {"template": template, "name": name, "precision": precision})


def test_blank_is_the_hardware_default_and_amp_a_choice(personas: Any) -> None:
    a100 = _gpu(personas, "gpu-a100", "a100")
    assert a100.precision == "" and a100.precision_label == "tf32"
    assert _gpu(personas, "gpu-v100", "v100").precision_label == "fp32"
    amp = _gpu(personas, "gpu-a100", "a100-amp", "bf16")
    assert amp.precision == "amp" and amp.precision_label == "amp"
    # A V100 has no TF32 tensor cores: asking for tf32 estimates it in fp32, and says so.
    assert _gpu(personas, "gpu-v100", "v100-tf32", "tf32").precision_label == "fp32"


def test_bad_precision_is_named_under_its_field(personas: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        _gpu(personas, "gpu-a100", "x", "int8")
    assert "must be one of fp32, tf32, amp" in caught.value.message_dict["precision"][0]
    with pytest.raises(ValidationError) as caught:
        services.create(personas.member, personas.project,
                        {"template": "cpu-c6i.8xlarge", "precision": "amp"})
    assert caught.value.message_dict == {
        "precision": ["amp applies to GPU types; a cpu type trains in fp32"]}


def test_estimates_follow_the_types_precision(personas: Any, zoo_model: Any,
                                              tiny_profile: ModelProfile) -> None:
    from webapp.profiling.models import ProfileRun
    from webapp.profiling.services import record_profile

    _gpu(personas, "gpu-a100", "a100")
    _gpu(personas, "gpu-a100", "a100-amp", "amp")
    _gpu(personas, "gpu-a100", "a100-fp32", "fp32")
    run = ProfileRun.objects.create(project=personas.project, model=zoo_model,
                                    batch_size=tiny_profile.batch_size)
    record_profile(run.pk, tiny_profile)
    total = {name: sum(r.seconds for r in run.results.filter(resource=name))
             for name in ("a100", "a100-amp", "a100-fp32")}
    assert total["a100-amp"] < total["a100"] < total["a100-fp32"]


def test_pages_and_api_show_and_keep_the_precision(personas: Any, login: Any) -> None:
    client = login(personas.member)
    url = f"/resources/project/{personas.project.pk}/new/"
    assert client.post(url, {"template": "gpu-a100"}).status_code == 302
    assert client.post(url, {"template": "gpu-h100", "precision": "amp"}).status_code == 302
    page = client.get(f"/projects/{personas.project.pk}/").content.decode()
    assert "tf32 <span class=\"muted\">(default)</span>" in page and ">amp</td>" in page
    form = client.get(url).content.decode()
    assert 'name="precision"' in form and "Precision (default)" in form
    h100 = ResourceType.objects.get(project=personas.project, name="gpu-h100")
    edit = client.get(f"/resources/{h100.pk}/edit/").content.decode()
    assert '<option value="amp" selected>' in edit  # an edit starts from the stored choice
    bad = client.post(url, {"template": "gpu-t4", "name": "t4", "precision": "fp8"})
    assert bad.status_code == 400 and "Select a valid choice" in bad.content.decode()
    created = client.post("/api/resource-types/", {"project": personas.project.pk,
                                                   "template": "gpu-a10g",
                                                   "precision": "bf16"},
                          content_type="application/json")
    assert created.status_code == 201 and created.json()["precision"] == "amp"
    refused = client.post("/api/resource-types/", {"project": personas.project.pk,
                                                   "template": "gpu-a10g", "name": "z",
                                                   "precision": "int8"},
                          content_type="application/json")
    assert refused.status_code == 400 and "precision" in refused.json()
    # A member's PATCH changes the precision, and a bad one is named, not ignored.
    patch = f"/api/resource-types/{created.json()['id']}/"
    changed = client.patch(patch, {"precision": "tf32"}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["precision"] == "tf32"
    ignored = client.patch(patch, {"precision": "abc"}, content_type="application/json")
    assert ignored.status_code == 400 and "precision" in ignored.json()


def test_the_profile_page_names_each_gpu_columns_precision(personas: Any, login: Any,
                                                            zoo_model: Any,
                                                            tiny_profile: ModelProfile) -> None:
    from webapp.profiling.models import ProfileRun
    from webapp.profiling.services import record_profile

    _gpu(personas, "gpu-a100", "a100-amp", "amp")
    run = ProfileRun.objects.create(project=personas.project, model=zoo_model,
                                    batch_size=tiny_profile.batch_size)
    record_profile(run.pk, tiny_profile)
    page = login(personas.member).get(f"/profiling/{run.pk}/").content.decode()
    assert "a100-amp · amp (ms)" in page
    assert "gpu-a100 at amp (roofline from" not in page  # only its own type
    assert "a100-amp at amp (roofline from" in page  # the figure's hover says it too
    model_page = login(personas.member).get(f"/models/{zoo_model.pk}/").content.decode()
    assert "a100-amp · amp (ms)" in model_page
