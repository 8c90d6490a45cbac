"""The optional spot `market` of a resource: parsed, validated field by field, written back
only where given (so files without one keep their exact meaning and bytes)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from heterps_core.errors import InstanceError
from heterps_core.instance import Instance, SpotMarket

DATA = Path(__file__).parent / "schedulers" / "data"
MARKET = {"spot_price": 0.9, "interruptions_per_hour": 0.05, "restart_s": 120}


def with_market(market: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "tiny.json").read_text())
    data["resources"][1]["market"] = copy.deepcopy(market)
    return data


def test_market_is_read_and_written_back() -> None:
    inst = Instance.from_dict(with_market(MARKET))
    assert inst.resource("gpu").market == SpotMarket(0.9, 0.05, 120.0)
    assert inst.resource("cpu").market is None
    assert inst.has_markets
    again = Instance.from_dict(inst.to_dict())
    assert again == inst
    assert again.to_dict()["resources"][1]["market"] == MARKET
    assert "market" not in again.to_dict()["resources"][0]


def test_instance_without_markets_round_trips_unchanged() -> None:
    raw = json.loads((DATA / "tiny.json").read_text())
    inst = Instance.from_dict(raw)
    assert not inst.has_markets
    assert all("market" not in r for r in inst.to_dict()["resources"])


def test_market_survives_a_what_if_and_v2() -> None:
    inst = Instance.from_dict(with_market(MARKET))
    assert inst.with_resource("gpu", count=3).resource("gpu").market == SpotMarket(0.9, 0.05, 120)
    assert inst.as_v2("bsp").resource("gpu").market == SpotMarket(0.9, 0.05, 120)


BAD = [
    ([1, 2], "resources[1].market", "must be a JSON object"),
    ({**MARKET, "zone": "a"}, "resources[1].market.zone", "unknown field"),
    ({"spot_price": 1, "restart_s": 1}, "resources[1].market.interruptions_per_hour",
     "missing"),
    ({**MARKET, "spot_price": 0}, "resources[1].market.spot_price", "greater than 0"),
    ({**MARKET, "spot_price": "cheap"}, "resources[1].market.spot_price", "number"),
    ({**MARKET, "interruptions_per_hour": 0}, "resources[1].market.interruptions_per_hour",
     "greater than 0"),
    ({**MARKET, "interruptions_per_hour": 1e3}, "resources[1].market.interruptions_per_hour",
     "at most"),
    ({**MARKET, "restart_s": -1}, "resources[1].market.restart_s", "negative"),
    ({**MARKET, "restart_s": True}, "resources[1].market.restart_s", "number"),
]


@pytest.mark.parametrize(("market", "field", "words"), BAD)
def test_bad_market_names_field_and_problem(market: Any, field: str, words: str) -> None:
    with pytest.raises(InstanceError) as info:
        Instance.from_dict(with_market(market))
    assert info.value.field == field
    assert words in info.value.problem


def test_on_demand_drops_every_spot_offer_and_nothing_else() -> None:
    from heterps_core.instance import Instance

    data = {"version": 1, "batch_size": 10, "throughput_target": 5,
            "resources": [{"name": "g", "kind": "gpu", "price_per_hour": 2.0, "count": 2,
                           "memory_gb": 16, "network_gbps": 10,
                           "market": {"spot_price": 0.6, "interruptions_per_hour": 0.01,
                                      "restart_s": 60}}],
            "layers": [{"name": "l0", "kind": "dense", "compute_s": {"g": 0.01},
                        "output_mb": 0.1, "sync_mb": 0.1, "memory_gb": 0.1,
                        "shardable": False}]}
    instance = Instance.from_dict(data)
    plain = instance.on_demand()
    assert instance.has_markets and not plain.has_markets
    del data["resources"][0]["market"]
    assert plain.to_dict() == Instance.from_dict(data).to_dict()
