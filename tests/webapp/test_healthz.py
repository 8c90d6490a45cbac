"""/healthz reports database, channel layer and broker, without a login."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from webapp.health import services

pytestmark = pytest.mark.django_db


def test_healthz_is_public_and_reports_every_service(client: Any) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "channel_layer", "broker"}
    assert all(check["ok"] for check in body["checks"].values())
    assert response["Cache-Control"].startswith("max-age=0")


def test_a_failing_check_turns_healthz_into_503_with_the_reason(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_broker() -> str:
        raise ConnectionError("broker refused the connection")

    monkeypatch.setitem(services.CHECKS, "broker", broken_broker)
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    assert body["checks"]["broker"] == {
        "ok": False, "detail": "ConnectionError: broker refused the connection",
        "ms": body["checks"]["broker"]["ms"],
    }
    assert body["checks"]["database"]["ok"]


@pytest.mark.django_db(transaction=True)
async def test_healthz_stays_ok_while_a_websocket_consumer_is_receiving() -> None:
    """Daphne's event loop receives for every open websocket; the check runs in a worker
    thread with its own loop. On channels-redis one shared layer refused the second loop
    ("Two event loops are trying to receive() on one channel layer at once!"): 503."""
    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    channel = await layer.new_channel()
    receiving = asyncio.ensure_future(layer.receive(channel))  # an open consumer
    await asyncio.sleep(0.2)
    try:
        report = await sync_to_async(services.report, thread_sensitive=False)()
    finally:
        receiving.cancel()
    assert report["checks"]["channel_layer"]["ok"], report["checks"]["channel_layer"]
    assert report["status"] == "ok"
