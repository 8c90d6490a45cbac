"""A resource type's optional spot offer (issue 26): one validation for pages, API and
admin with the core's ranges, defaults from public interruption bands labelled as defaults,
and the offer carried into the instances plans are made on."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from webapp.catalogue import services
from webapp.catalogue.models import ResourceType

pytestmark = pytest.mark.django_db

GOOD = {"name": "t4", "kind": "gpu", "price_per_hour": 0.53, "count": 4, "memory_gb": 16,
        "network_gbps": 25}
SPOT = {"spot_price": 0.16, "interruptions_per_hour": 0.0002, "restart_s": 90}


@pytest.mark.parametrize(("changes", "field", "says"), [
    ({"spot_price": 0}, "spot_price", "greater than 0"),
    ({"spot_price": "cheap"}, "spot_price", "must be a number"),
    ({"spot_price": 1e6}, "spot_price", "at most 10,000 ($ per spot unit-hour)"),
    ({"interruptions_per_hour": 0}, "interruptions_per_hour", "greater than 0"),
    ({"interruptions_per_hour": 61}, "interruptions_per_hour", "at most 60"),
    ({"interruptions_per_hour": float("inf")}, "interruptions_per_hour", "finite"),
    ({"interruptions_per_hour": ""}, "interruptions_per_hour", "required with a spot price"),
    ({"restart_s": -1}, "restart_s", "must not be negative"),
    ({"restart_s": 10**6}, "restart_s", "between 0 and 86,400"),
    ({"spot_price": ""}, "interruptions_per_hour", "needs a spot price"),
])
def test_a_bad_spot_offer_names_the_field(changes: dict[str, Any], field: str,
                                          says: str) -> None:
    with pytest.raises(ValidationError) as caught:
        services.clean({**GOOD, **SPOT, **changes})
    assert says in " ".join(caught.value.message_dict[field])


def test_no_offer_is_on_demand_and_restart_has_a_labelled_default() -> None:
    plain = services.clean(GOOD)
    assert (plain["spot_price"], plain["interruptions_per_hour"], plain["restart_s"]) == (
        None, None, None)
    spot = services.clean({**GOOD, "spot_price": "0.2", "interruptions_per_hour": "0.001"})
    # Empty: measured from the type's runs, assumed until then (ResourceType.restart).
    assert (spot["spot_price"], spot["interruptions_per_hour"], spot["restart_s"]) == (
        0.2, 0.001, None)


def test_a_member_sets_and_withdraws_an_offer_through_the_api(personas: Any,
                                                              login: Any) -> None:
    client = login(personas.member)
    made = client.post("/api/resource-types/", {**GOOD, **SPOT,
                                                "project": personas.project.pk},
                       content_type="application/json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["spot_price"], body["interruptions_per_hour"], body["restart_s"]) == (
        0.16, 0.0002, 90.0)
    row = ResourceType.objects.get(pk=body["id"])
    assert row.to_core().market is not None
    assert row.to_core().to_dict()["market"] == {"spot_price": 0.16,
                                                 "interruptions_per_hour": 0.0002,
                                                 "restart_s": 90.0}
    bad = client.patch(f"/api/resource-types/{row.pk}/", {"interruptions_per_hour": 0},
                       content_type="application/json")
    assert bad.status_code == 400
    assert "interruptions_per_hour" in bad.json()
    cleared = client.patch(f"/api/resource-types/{row.pk}/", {"spot_price": None},
                           content_type="application/json")
    assert cleared.status_code == 200, cleared.content
    assert cleared.json()["interruptions_per_hour"] is None
    row.refresh_from_db()
    assert row.market is None and "market" not in row.to_core().to_dict()


def test_viewer_cannot_set_an_offer(personas: Any, login: Any) -> None:
    row = services.create(personas.member, personas.project, GOOD)
    refused = login(personas.viewer).patch(f"/api/resource-types/{row.pk}/", SPOT,
                                           content_type="application/json")
    assert refused.status_code in (403, 404)
    row.refresh_from_db()
    assert row.spot_price is None


def test_the_form_names_every_spot_problem_and_labels_the_defaults(personas: Any,
                                                                   login: Any) -> None:
    client = login(personas.member)
    url = f"/resources/project/{personas.project.pk}/new/"
    page = client.get(url).content.decode()
    assert "public band" in page and "default, not a quote" in page
    refused = client.post(url, {**GOOD, "spot_price": "-1", "interruptions_per_hour": "x",
                                "restart_s": ""})
    assert refused.status_code == 400
    text = refused.content.decode()
    assert "must be greater than 0" in text and "must be a number" in text
    assert not ResourceType.objects.filter(project=personas.project, name="t4").exists()
    saved = client.post(url, {**GOOD, **SPOT})
    assert saved.status_code == 302
    assert ResourceType.objects.get(project=personas.project, name="t4").spot_price == 0.16


def test_catalogue_defaults_are_labelled_defaults_from_public_bands() -> None:
    entries = {e["name"]: e for e in services.hardware_catalogue()}
    t4, cpu = entries["gpu-t4"], entries["cpu-c6i.8xlarge"]
    assert 0 < t4["spot_price"] < t4["price_per_hour"]
    assert t4["interruptions_per_hour"] == pytest.approx(0.10 / 730, rel=1e-3)
    assert cpu["interruptions_per_hour"] == pytest.approx(0.05 / 730, rel=1e-3)
    assert "default, not a quote" in t4["spot_source"] and "5-10%/month" in t4["spot_source"]
    # The defaults pass the same validation a typed-in offer does.
    services.clean({**GOOD, **{f: t4[f] for f in ("spot_price", "interruptions_per_hour",
                                                   "restart_s")}})


def test_the_instance_a_plan_is_made_on_carries_the_offer(personas: Any, profiled: Any,
                                                          catalogue: list[Any]) -> None:
    from webapp.planning import services as planning

    gpu = next(r for r in catalogue if r.kind == "gpu")
    services.update(personas.member, gpu, {"spot_price": gpu.price_per_hour / 4,
                                           "interruptions_per_hour": 0.001})
    cluster = planning.create_cluster(personas.member, personas.project, "spot",
                                      list(ResourceType.objects.filter(
                                          project=personas.project)))
    instance, _, _ = planning.build_request_instance(profiled.model, cluster,
                                                     profiled.batch_size, 100.0, None)
    markets = {r.name: r.market for r in instance.resources}
    assert markets[gpu.name] is not None
    assert markets[gpu.name].spot_price == pytest.approx(gpu.price_per_hour / 4)
    assert all(m is None for name, m in markets.items() if name != gpu.name)
