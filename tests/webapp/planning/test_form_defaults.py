"""What a first user meets on the plan form (issue 25.11): the project's only cluster and
only model are chosen already; with two, neither is guessed."""

from __future__ import annotations

import re
from typing import Any

import pytest

from webapp.planning.services import create_cluster

pytestmark = pytest.mark.django_db


def _selected(page: str, field: str) -> list[str]:
    select = re.search(rf'<select name="{field}"[^>]*>(.*?)</select>', page, re.S)
    assert select, field
    return re.findall(r'<option value="(\d+)"[^>]*selected', select.group(1))


def test_the_only_cluster_and_model_are_preselected(
    login: Any, personas: Any, zoo_model: Any, cluster: Any
) -> None:
    page = login(personas.member).get(f"/planning/project/{personas.project.pk}/")
    html = page.content.decode()
    assert _selected(html, "cluster") == [str(cluster.pk)]
    assert _selected(html, "model") == [str(zoo_model.pk)]


def test_with_two_clusters_none_is_guessed(
    login: Any, personas: Any, zoo_model: Any, cluster: Any, catalogue: list[Any]
) -> None:
    create_cluster(personas.member, personas.project, "second", catalogue[:1])
    html = login(personas.member).get(f"/planning/project/{personas.project.pk}/").content.decode()
    assert _selected(html, "cluster") == []
