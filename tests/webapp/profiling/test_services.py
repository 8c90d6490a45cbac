"""Profiling: a run through the work kind measures every layer, and the results say what was
measured on this machine and what was estimated for each resource type."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.http import Http404

from webapp.background.models import Status, Work
from webapp.background.services import run_work
from webapp.modelzoo.services import import_model
from webapp.profiling import services
from webapp.profiling.models import LayerResult
from webapp.projects.permissions import PermissionDenied

pytestmark = pytest.mark.django_db


def test_the_profile_kind_times_each_layer_and_estimates_each_resource(
    personas: Any, zoo_model: Any, tiny_profile: Any
) -> None:
    run = services.start_profile(personas.member, zoo_model, batch_size=32, repeats=1)
    assert run.work.kind == "profile" and run.work.params == {"run": run.pk}
    run_work(run.work.pk)
    work = Work.objects.get(pk=run.work.pk)
    assert work.status == Status.SUCCEEDED, work.error
    run.refresh_from_db()
    assert run.done and run.profile["batch_size"] == 32
    layers = len(zoo_model.layers)
    measured = LayerResult.objects.filter(run=run, source="measured")
    estimated = LayerResult.objects.filter(run=run, source="estimated")
    assert measured.count() == layers and estimated.count() == layers * 4
    assert {r.device for r in measured} == {run.device}
    assert all(r.seconds > 0 for r in LayerResult.objects.filter(run=run))
    assert {r.resource for r in estimated} == {"cpu-96", "t4", "v100", "a100-40"}
    # The stored median is the profiler's figure, not a rounded copy.
    by_name = {layer["name"]: layer["time"]["median_s"] for layer in run.profile["layers"]}
    assert {r.layer: r.seconds for r in measured} == by_name
    assert work.result["layers"] == layers


def test_bad_profile_requests_name_the_field(personas: Any, zoo_model: Any) -> None:
    def errors(**kwargs: Any) -> dict[str, list[str]]:
        with pytest.raises(ValidationError) as err:
            services.start_profile(personas.member, zoo_model, **kwargs)
        return err.value.message_dict

    assert "batch_size" in errors(batch_size=10**7)
    assert "repeats" in errors(repeats=0)
    imported = import_model(personas.member, personas.project, "mine", '[{"name": "a"}]')
    with pytest.raises(ValidationError) as err:
        services.start_profile(personas.member, imported)
    assert "model" in err.value.message_dict
    with pytest.raises(PermissionDenied):
        services.start_profile(personas.viewer, zoo_model)
    with pytest.raises(Http404):
        services.start_profile(personas.outsider, zoo_model)


def test_the_layer_table_has_one_row_per_layer(profiled: Any) -> None:
    table = services.layer_table(profiled)
    assert [row["layer"] for row in table["rows"]] == profiled.model.layer_names()
    assert all(len(row["cells"]) == len(table["resources"]) for row in table["rows"])
    assert services.layer_table(None) == {"resources": [], "rows": []}
