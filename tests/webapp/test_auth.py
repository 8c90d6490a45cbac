"""Login is required for every page, API endpoint and websocket."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.urls import reverse

from webapp.asgi import application
from webapp.background.models import Work

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/", "/projects/new/", "/projects/1/", "/work/1/", "/admin/"])
def test_pages_redirect_anonymous_users_to_login(client: Any, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(("/login/", "/admin/login/"))


@pytest.mark.parametrize("url", ["/api/", "/api/projects/", "/api/work/", "/api/schema/"])
def test_api_refuses_anonymous_callers_with_401(client: Any, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")


def test_login_page_is_public_and_logging_in_reaches_the_dashboard(
    client: Any, django_user_model: Any
) -> None:
    django_user_model.objects.create_user("ada", password="lovelace-1843")
    assert client.get(reverse("login")).status_code == 200
    response = client.post(
        reverse("login"), {"username": "ada", "password": "lovelace-1843"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/"
    assert b"Dashboard" in response.content


def test_wrong_password_is_refused_with_a_message(client: Any, django_user_model: Any) -> None:
    django_user_model.objects.create_user("ada", password="lovelace-1843")
    response = client.post(reverse("login"), {"username": "ada", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content


def test_api_token_authenticates(client: Any, django_user_model: Any) -> None:
    django_user_model.objects.create_user("ada", password="lovelace-1843")
    token = client.post(
        "/api/token/", {"username": "ada", "password": "lovelace-1843"}
    ).json()["token"]
    response = client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200
    assert response.json()["results"] == []


def test_schema_is_served_to_logged_in_users(login: Any, django_user_model: Any) -> None:
    client = login(django_user_model.objects.create_user("ada"))
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/projects/" in paths and "/api/work/{id}/cancel/" in paths
    assert client.get("/api/docs/").status_code == 200


def _session_headers(client: Any) -> list[tuple[bytes, bytes]]:
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    return [(b"cookie", cookie.encode()), (b"origin", b"http://127.0.0.1")]


@pytest.mark.django_db(transaction=True)
async def test_websocket_refuses_anonymous_and_accepts_a_member(
    client: Any, personas: Any
) -> None:
    work = await Work.objects.acreate(project=personas.project, kind="evaluate")
    path = f"/ws/work/{work.pk}/"

    anonymous = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://127.0.0.1")])
    connected, code = await anonymous.connect(timeout=10)
    assert not connected and code == 4404
    # Every test ends its consumers while the loop still runs: one left waiting on the
    # channel layer is cancelled at loop teardown, and a Redis layer can hang there.
    await anonymous.disconnect()

    await client.aforce_login(personas.viewer)
    member = WebsocketCommunicator(application, path, headers=_session_headers(client))
    connected, _ = await member.connect(timeout=10)
    assert connected
    first = await member.receive_json_from(timeout=5)
    assert first["work"]["id"] == work.pk and first["work"]["status"] == "queued"
    await member.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_websocket_refuses_a_foreign_origin(client: Any, personas: Any) -> None:
    work = await Work.objects.acreate(project=personas.project, kind="evaluate")
    await client.aforce_login(personas.owner)
    cookie = _session_headers(client)[0]
    socket = WebsocketCommunicator(
        application, f"/ws/work/{work.pk}/", headers=[cookie, (b"origin", b"https://evil.test")]
    )
    connected, _ = await socket.connect(timeout=10)
    assert not connected
    await socket.disconnect()
