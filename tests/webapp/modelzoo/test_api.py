"""Models API: add from the zoo or import a chain; viewers read; outsiders see nothing."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def _post(client: Any, data: Any) -> Any:
    return client.post("/api/models/", data, content_type="application/json")


def test_models_over_the_api(personas: Any, login: Any) -> None:
    pk = personas.project.pk
    assert _post(login(personas.viewer), {"project": pk, "zoo_name": "dlrm"}).status_code == 403
    assert _post(login(personas.outsider), {"project": pk, "zoo_name": "dlrm"}).status_code == 404
    member = login(personas.member)
    assert _post(member, {"project": pk, "zoo_name": "gpt9"}).status_code == 400
    added = _post(member, {"project": pk, "zoo_name": "dlrm", "size": "tiny"})
    assert added.status_code == 201 and {layer["kind"] for layer in added.json()["layers"]} == {
        "embedding", "dense"}
    imported = _post(member, {"project": pk, "name": "mine", "layers": [{"name": "a"}]})
    assert imported.status_code == 201 and imported.json()["source"] == "imported"
    bad = _post(member, {"project": pk, "name": "x", "layers": [{"name": "a", "kind": "?"}]})
    assert bad.status_code == 400 and "layers[0].kind" in bad.json()
    assert login(personas.viewer).get(f"/api/models/?project={pk}").json()["count"] == 2
    assert login(personas.outsider).get(
        f"/api/models/{added.json()['id']}/").status_code == 404
