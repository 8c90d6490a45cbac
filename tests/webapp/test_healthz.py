"""/healthz reports database, channel layer and broker, without a login."""

from __future__ import annotations

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
