"""Model pages: list and detail for every role, 404 for the outsider, form errors by field,
the layer table with profile numbers and the chart's data."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.modelzoo.models import RegisteredModel

pytestmark = pytest.mark.django_db


def test_roles_see_the_pages_and_the_outsider_gets_404(personas: Any, login: Any,
                                                       zoo_model: Any) -> None:
    urls = [f"/models/project/{personas.project.pk}/", f"/models/{zoo_model.pk}/"]
    for user in (personas.owner, personas.member, personas.viewer):
        client = login(user)
        for url in urls:
            assert client.get(url).status_code == 200
    client = login(personas.outsider)
    for url in urls:
        assert client.get(url).status_code == 404
    assert client.post(f"/models/project/{personas.project.pk}/add/",
                       {"zoo_name": "dlrm", "size": "tiny"}).status_code == 404
    assert client.post(f"/profiling/start/{zoo_model.pk}/", {"batch_size": 8}).status_code == 404


def test_adding_from_the_zoo_and_form_errors(personas: Any, login: Any) -> None:
    client = login(personas.member)
    url = f"/models/project/{personas.project.pk}/add/"
    response = client.post(url, {"zoo_name": "gpt9", "size": "tiny"})
    assert response.status_code == 400
    assert "no zoo model &#x27;gpt9&#x27;" in response.content.decode()
    response = client.post(url, {"zoo_name": "two_tower", "size": "tiny"})
    model = RegisteredModel.objects.get(name="two_tower-tiny")
    assert response["Location"] == f"/models/{model.pk}/"
    assert login(personas.viewer).post(url, {"zoo_name": "dlrm"}).status_code == 403


def test_import_errors_name_the_layer_field(personas: Any, login: Any) -> None:
    response = login(personas.member).post(
        f"/models/project/{personas.project.pk}/import/",
        {"name": "mine", "layers": '[{"name": "a", "kind": "conv"}]'})
    assert response.status_code == 400
    assert "layers[0].kind: must be one of embedding, sparse, dense" in response.content.decode()


def test_the_detail_page_shows_profile_numbers_and_tags(personas: Any, login: Any,
                                                        profiled: Any) -> None:
    response = login(personas.viewer).get(f"/models/{profiled.model.pk}/")
    page = response.content.decode()
    table = response.context["table"]
    assert table["resources"][0] == "this machine"
    assert set(table["resources"][1:]) == {"cpu-96", "t4", "v100", "a100-40"}
    assert len(table["rows"]) == len(profiled.model.layers)
    assert '<span class="tag tag-sparse">sparse</span>' in page
    assert '<span class="tag tag-dense">dense</span>' in page
    first = table["rows"][0]["cells"][0]
    assert first["source"] == "measured" and f"{first['ms']:.4f}" in page
    chart = response.context["chart"]
    assert chart["layers"] == profiled.model.layer_names()
    assert len(chart["seconds"][0]) == len(chart["resources"])


def test_a_size_the_model_lacks_is_an_error_under_the_size_field(personas: Any,
                                                                 login: Any) -> None:
    client = login(personas.member)
    page = client.get(f"/models/project/{personas.project.pk}/").content.decode()
    assert 'value="criteo-1tb"' in page and "dlrm only" in page
    url = f"/models/project/{personas.project.pk}/add/"
    response = client.post(url, {"zoo_name": "deepfm", "size": "paddle"})
    assert response.status_code == 400
    text = response.content.decode()
    assert "deepfm comes in tiny, small, production; not &#x27;paddle&#x27;" in text
    assert not RegisteredModel.objects.filter(zoo_name="deepfm").exists()
    response = client.post(url, {"zoo_name": "ctr_dnn", "size": "paddle"})
    assert response.status_code == 302
    assert RegisteredModel.objects.get(name="ctr_dnn-paddle").size == "paddle"
