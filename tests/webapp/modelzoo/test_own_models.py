"""Bring your own model: an allow-listed factory traced into a chain, profiled and planned;
a layer chain with timings measured elsewhere plans without a profile."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from webapp.modelzoo import services
from webapp.modelzoo.models import Source

pytestmark = pytest.mark.django_db

EXAMPLE = "heterps_core.zoo.examples.tabular:tabular_ctr"


def test_member_imports_the_example_factory_in_the_page(personas: Any, login: Any) -> None:
    client = login(personas.member)
    page = client.get(f"/models/project/{personas.project.pk}/").content.decode()
    assert EXAMPLE in page and "Bring your own model" in page
    response = client.post(f"/models/project/{personas.project.pk}/factory/",
                           {"own-factory": EXAMPLE, "own-name": "my ctr"})
    assert response.status_code == 302
    from webapp.modelzoo.models import RegisteredModel

    model = RegisteredModel.objects.get(project=personas.project, name="my ctr")
    assert model.source == Source.FACTORY and model.profilable
    assert [layer["name"] for layer in model.layers] == ["embedding", "mlp_0", "mlp_2", "head"]
    assert model.layers[0]["kind"] == "embedding" and model.default_batch_size == 256
    detail = client.get(f"/models/{model.pk}/").content.decode()
    assert "profile-form" in detail

    assert login(personas.viewer).post(f"/models/project/{personas.project.pk}/factory/",
                                       {"own-factory": EXAMPLE}).status_code == 403
    assert login(personas.outsider).post(f"/models/project/{personas.project.pk}/factory/",
                                         {"own-factory": EXAMPLE}).status_code == 404
    bad = login(personas.member).post(f"/models/project/{personas.project.pk}/factory/",
                      {"own-factory": EXAMPLE, "own-name": "x",
                       "own-example_input": "dense=float32[4]"})
    assert bad.status_code == 400 and "example" in bad.content.decode().lower()


def test_factory_profile_goes_through_the_profiler(personas: Any) -> None:
    from heterps_core.profiler import ProfileOptions
    from webapp.modelzoo.loading import profile

    model = services.add_factory_model(personas.member, personas.project, EXAMPLE)
    got = profile(model, ProfileOptions(threads=1, warmup=0, repeats=1), 32, lambda p: None)
    assert [layer.name for layer in got.layers] == [layer["name"] for layer in model.layers]
    assert got.batch_size == 32 and all(layer.time.median_s > 0 for layer in got.layers)


TIMED = {"batch_size": 128, "layers": [
    {"name": "emb", "kind": "embedding", "parameters": 1000, "compute_s": {"t4": 0.002,
     "cpu-96": 0.001}, "output_mb": 0.4, "sync_mb": 0.0, "memory_gb": 0.01},
    {"name": "fc", "kind": "dense", "parameters": 500, "compute_s": {"t4": 0.0005,
     "cpu-96": 0.004}, "output_mb": 0.1, "sync_mb": 0.002, "memory_gb": 0.001},
]}


def test_timed_chain_plans_without_profiling(personas: Any, catalogue: list[Any]) -> None:
    from webapp.planning.services import build_request_instance, create_cluster

    model = services.import_model(personas.member, personas.project, "given",
                                  json.dumps(TIMED))
    assert model.timed and model.default_batch_size == 128
    types = [r for r in catalogue if r.name in ("t4", "cpu-96")]
    cluster = create_cluster(personas.member, personas.project, "two", types)
    instance, provenance, run = build_request_instance(model, cluster, 128, 1000.0, None)
    assert run is None and instance.batch_size == 128
    assert {p["source"] for p in provenance} == {"given"}
    assert instance.layers[1].compute_s == {"t4": 0.0005, "cpu-96": 0.004}
    with pytest.raises(ValidationError, match="batches of 128"):
        build_request_instance(model, cluster, 64, 1000.0, None)
    other = create_cluster(personas.member, personas.project, "v100",
                           [r for r in catalogue if r.name == "v100"])
    with pytest.raises(ValidationError, match="layer emb has timings for t4, cpu-96 only"):
        build_request_instance(model, other, 128, 1000.0, None)


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d.pop("batch_size"), "layers.batch_size"),
    (lambda d: d["layers"][1].pop("compute_s"), "layers[1].compute_s"),
    (lambda d: d["layers"][0]["compute_s"].update(t4=0), "layers[0].compute_s.t4"),
    (lambda d: d["layers"][0].update(memory_gb=-1), "layers[0].memory_gb"),
])
def test_bad_timings_name_the_field(personas: Any, change: Any, field: str) -> None:
    data = json.loads(json.dumps(TIMED))
    change(data)
    # Without a batch size the timings mean nothing: as a bare list, too.
    text = json.dumps(data if "batch_size" in data else data["layers"])
    with pytest.raises(ValidationError) as caught:
        services.import_model(personas.member, personas.project, "bad", text)
    assert field in caught.value.message_dict


def test_tiny_zoo_model_says_what_its_size_holds(personas: Any) -> None:
    tiny = services.add_zoo_model(personas.member, personas.project, "ctr_dnn", "tiny")
    production = services.add_zoo_model(personas.member, personas.project, "ctr_dnn",
                                        "production")
    assert "This tiny build" in tiny.description
    assert tiny.description != production.description
