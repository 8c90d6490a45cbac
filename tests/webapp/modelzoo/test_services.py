"""Models: zoo entries registered with their chain, imports validated field by field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.http import Http404

from heterps_core import zoo
from heterps_core.zoo.base import chain_of
from webapp.modelzoo import services
from webapp.projects.permissions import PermissionDenied

pytestmark = pytest.mark.django_db


def _errors(call: Any) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as err:
        call()
    return err.value.message_dict


def test_a_zoo_model_carries_its_chain_with_sparse_and_dense_layers(personas: Any) -> None:
    model = services.add_zoo_model(personas.member, personas.project, "dlrm", "tiny")
    entry = zoo.get("dlrm")
    chain = chain_of(entry, entry.config("tiny"))
    assert model.name == "dlrm-tiny" and model.default_batch_size == entry.default_batch_size
    assert [layer["name"] for layer in model.layers] == [spec.name for spec in chain]
    assert [layer["kind"] for layer in model.layers] == [spec.kind for spec in chain]
    assert model.sparse_layers == sum(1 for spec in chain if spec.is_sparse) > 0
    # Adding it again is harmless; the same name for something else is not.
    assert services.add_zoo_model(personas.owner, personas.project, "dlrm", "tiny") == model
    assert "name" in _errors(lambda: services.add_zoo_model(
        personas.owner, personas.project, "deepfm", "tiny", name="dlrm-tiny"))


def test_bad_zoo_requests_name_the_field(personas: Any) -> None:
    assert _errors(lambda: services.add_zoo_model(personas.member, personas.project, "gpt9"))[
        "zoo_name"][0].startswith("no zoo model 'gpt9'; known: ctr_dnn")
    assert "size" in _errors(lambda: services.add_zoo_model(personas.member, personas.project,
                                                            "dlrm", "huge"))
    with pytest.raises(PermissionDenied):
        services.add_zoo_model(personas.viewer, personas.project, "dlrm")
    with pytest.raises(Http404):
        services.add_zoo_model(personas.outsider, personas.project, "dlrm")


def test_an_imported_chain_is_validated_layer_by_layer(personas: Any) -> None:
    def imported(chain: Any, name: str = "mine") -> Any:
        text = chain if isinstance(chain, str) else json.dumps(chain)
        return lambda: services.import_model(personas.member, personas.project, name, text)

    assert _errors(imported("[1,")) == {"layers": ["not valid JSON (line 1, column 4: "
                                                   "Expecting value)"]}
    assert _errors(imported([])) == {"layers": ["must be a non-empty JSON list of layers"]}
    assert _errors(imported([{"name": "a"}, {"name": "a"}])) == {
        "layers[1].name": ["duplicate layer name 'a'"]}
    assert "layers[0].kind" in _errors(imported([{"name": "a", "kind": "conv"}]))
    assert "layers[0].parameters" in _errors(imported([{"name": "a", "parameters": -1}]))
    assert "name" in _errors(imported([{"name": "a"}], name=""))
    model = imported([{"name": "emb", "kind": "embedding", "parameters": 10},
                      {"name": "fc", "parameters": 5}])()
    assert model.source == "imported" and not model.profilable
    assert model.layers[0]["shardable"] is True and model.layers[1]["kind"] == "dense"
    assert model.parameters == 15


def test_published_sizes_belong_to_their_model(personas: Any) -> None:
    # Issue 21: dlrm criteo-1tb is the MLPerf/NVIDIA DLRM, planned at full scale.
    model = services.add_zoo_model(personas.member, personas.project, "dlrm", "criteo-1tb")
    assert model.name == "dlrm-criteo-1tb" and model.size == "criteo-1tb"
    assert "26 tables" in model.description
    errors = _errors(lambda: services.add_zoo_model(personas.member, personas.project,
                                                    "ctr_dnn", "criteo-1tb"))
    assert errors == {"size": ["ctr_dnn comes in tiny, small, production, paddle; not "
                               "'criteo-1tb'"]}
    entries = {e["name"]: e for e in services.zoo_catalogue()}
    assert entries["ctr_dnn"]["sizes"][-1] == "paddle"
    assert "criteo-1tb" not in entries["deepfm"]["sizes"]
