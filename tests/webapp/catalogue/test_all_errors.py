"""The resource-type form says every problem at once (issue 25.11), each on its field, in
the rules' own words; a good entry still saves."""

from __future__ import annotations

import html
from typing import Any

import pytest

from webapp.catalogue.forms import ResourceTypeForm
from webapp.catalogue.models import ResourceType

pytestmark = pytest.mark.django_db


def test_every_bad_field_is_named_at_once() -> None:
    form = ResourceTypeForm({"name": "bad name!", "kind": "gpu", "price_per_hour": "-1",
                             "count": "many", "memory_gb": "", "network_gbps": "0",
                             "precision": "amp"})
    assert not form.is_valid()
    assert set(form.errors) == {"name", "price_per_hour", "count", "memory_gb", "network_gbps"}
    assert "letters, digits" in form.errors["name"][0]
    assert form.errors["count"] == ["must be a number, got 'many'"]
    assert form.errors["memory_gb"] == ["this field is required"]
    assert "greater than 0" in form.errors["price_per_hour"][0]


def test_a_cpu_type_at_amp_is_named_with_the_rest() -> None:
    form = ResourceTypeForm({"name": "c", "kind": "cpu", "price_per_hour": "1", "count": "0",
                             "memory_gb": "64", "network_gbps": "10", "precision": "amp"})
    assert not form.is_valid()
    assert set(form.errors) == {"count", "precision"}


def test_the_page_shows_them_all_and_a_good_entry_saves(login: Any, personas: Any) -> None:
    client = login(personas.member)
    url = f"/resources/project/{personas.project.pk}/new/"
    bad = client.post(url, {"name": "", "kind": "gpu", "price_per_hour": "x", "count": "2",
                            "memory_gb": "16", "network_gbps": "-3"})
    page = html.unescape(bad.content.decode())
    assert bad.status_code == 400
    assert "this field is required" in page and "must be a number, got 'x'" in page
    assert "network_gbps" in page or "Network" in page
    good = client.post(url, {"name": "t4", "kind": "gpu", "price_per_hour": "0.35",
                             "count": "4", "memory_gb": "16", "network_gbps": "25"})
    assert good.status_code == 302 and ResourceType.objects.filter(name="t4").exists()
