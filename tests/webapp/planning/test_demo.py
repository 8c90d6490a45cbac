"""Demo loaders: the zoo models as they appear in the zoo, and a cluster of every demo type;
both idempotent (they run on every start)."""

from __future__ import annotations

from typing import Any

import pytest

from heterps_core import zoo
from webapp.modelzoo.models import RegisteredModel
from webapp.ops.demo import load_demo
from webapp.planning.models import Cluster

pytestmark = pytest.mark.django_db


def test_demo_models_and_cluster_are_loaded_once(django_user_model: Any) -> None:
    admin = django_user_model.objects.create_user("admin")
    first = load_demo(admin)
    assert first["zoo models"] == len(zoo.names()) and first["clusters"] == 1
    models = RegisteredModel.objects.all()
    assert sorted(m.zoo_name for m in models) == zoo.names()
    assert all(m.size == "tiny" and m.layers for m in models)
    cluster = Cluster.objects.get()
    assert cluster.resource_types.count() == 4
    again = load_demo(admin)
    assert again["zoo models"] == 0 and again["clusters"] == 0
