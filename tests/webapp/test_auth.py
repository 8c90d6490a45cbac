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


# Issue 12 item 9: sign-in throttling, named expiring revocable tokens, a token page.
FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def ada(django_user_model: Any, settings: Any) -> Any:
    settings.PASSWORD_HASHERS = FAST_HASHER
    return django_user_model.objects.create_user("ada", password="lovelace-1843")


def _sign_in(client: Any, password: str, username: str = "ada", address: str = "10.0.0.1"
             ) -> Any:
    return client.post(reverse("login"), {"username": username, "password": password},
                       REMOTE_ADDR=address)


def test_fifty_wrong_passwords_then_the_right_one_is_refused(client: Any, ada: Any) -> None:
    for _ in range(50):
        assert _sign_in(client, "wrong").status_code == 200
    response = _sign_in(client, "lovelace-1843")
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    assert b"Too many failed sign-ins for this account" in response.content
    # Another account from another address is not affected.
    other = _sign_in(client, "x", username="bob", address="10.0.0.2")
    assert b"Too many" not in other.content


def test_failures_from_one_address_throttle_it_across_accounts(client: Any, ada: Any) -> None:
    for i in range(20):
        _sign_in(client, "wrong", username=f"guess{i}")
    response = _sign_in(client, "lovelace-1843")
    assert b"Too many failed sign-ins from your address" in response.content
    assert _sign_in(client, "lovelace-1843", address="10.9.9.9").status_code == 302


def test_a_success_clears_the_accounts_failures(client: Any, ada: Any) -> None:
    for _ in range(4):
        _sign_in(client, "wrong")
    assert _sign_in(client, "lovelace-1843").status_code == 302
    client.logout()
    for _ in range(4):
        _sign_in(client, "wrong")
    assert _sign_in(client, "lovelace-1843").status_code == 302


def test_the_token_endpoint_is_throttled_with_a_429_and_a_reason(client: Any, ada: Any) -> None:
    for _ in range(5):
        answer = client.post("/api/token/", {"username": "ada", "password": "no"})
        assert answer.status_code == 400 and "password" in answer.json()
    answer = client.post("/api/token/", {"username": "ada", "password": "lovelace-1843"})
    assert answer.status_code == 429
    assert "Too many failed sign-ins" in answer.json()["detail"]


def test_guessing_token_keys_is_throttled_per_address(client: Any, ada: Any) -> None:
    for i in range(20):
        answer = client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token guess{i}")
        assert answer.status_code == 401
    assert client.get("/api/projects/", HTTP_AUTHORIZATION="Token guess").status_code == 429


def _token(client: Any) -> dict[str, Any]:
    answer = client.post("/api/token/", {"username": "ada", "password": "lovelace-1843",
                                         "name": "laptop", "days": 7})
    assert answer.status_code == 200, answer.content
    return dict(answer.json())


def _get(client: Any, key: str) -> int:
    return int(client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {key}").status_code)


def test_tokens_are_named_and_expire(client: Any, ada: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from webapp.accounts.models import ApiToken

    issued = _token(client)
    assert issued["name"] == "laptop" and issued["state"] == "active"
    assert _get(client, issued["token"]) == 200
    ApiToken.objects.filter(pk=issued["id"]).update(expires_at=timezone.now() - timedelta(1))
    assert _get(client, issued["token"]) == 401


def test_a_password_change_revokes_every_token(client: Any, ada: Any) -> None:
    issued = _token(client)
    assert _get(client, issued["token"]) == 200
    ada.set_password("a-new-secret-77")
    ada.save()
    assert _get(client, issued["token"]) == 401


def test_a_password_change_on_the_page_revokes_tokens(client: Any, ada: Any) -> None:
    issued = _token(client)
    client.force_login(ada)
    answer = client.post(reverse("accounts:password"), {
        "old_password": "lovelace-1843", "new_password1": "a-new-secret-77",
        "new_password2": "a-new-secret-77"})
    assert answer.status_code == 302
    assert _get(client, issued["token"]) == 401


def test_revoke_and_rotate_through_the_api(client: Any, ada: Any, django_user_model: Any
                                           ) -> None:
    first = _token(client)
    auth = {"HTTP_AUTHORIZATION": f"Token {first['token']}"}
    listed = client.get("/api/tokens/", **auth).json()["results"]
    assert [t["name"] for t in listed] == ["laptop"] and "token" not in listed[0]
    rotated = client.post(f"/api/tokens/{first['id']}/rotate/", **auth)
    assert rotated.status_code == 201
    new = rotated.json()["token"]
    assert _get(client, first["token"]) == 401 and _get(client, new) == 200
    mine = rotated.json()["id"]
    # Someone else's token is a 404 to them.
    other = django_user_model.objects.create_user("eve")
    client.force_login(other)
    assert client.delete(f"/api/tokens/{mine}/").status_code == 404
    client.logout()
    assert client.delete(f"/api/tokens/{mine}/",
                         HTTP_AUTHORIZATION=f"Token {new}").status_code == 204
    assert _get(client, new) == 401


def test_the_token_page_creates_shows_once_and_revokes(client: Any, ada: Any) -> None:
    from webapp.accounts.models import ApiToken

    client.force_login(ada)
    home = client.get("/").content.decode()
    assert reverse("accounts:tokens") in home  # linked from the navigation
    page = client.post(reverse("accounts:tokens"), {"name": "ci", "days": "30"})
    assert page.status_code == 200
    key = page.context["new_key"]
    assert key and key in page.content.decode()
    assert _get(client, key) == 200
    again = client.get(reverse("accounts:tokens")).content.decode()
    assert "ci" in again and key not in again  # shown once
    token = ApiToken.objects.get(name="ci")
    assert client.post(reverse("accounts:revoke-token", args=[token.pk])).status_code == 302
    assert _get(client, key) == 401
    bad = client.post(reverse("accounts:tokens"), {"name": "x" * 200, "days": "9999"})
    assert bad.status_code == 400 and set(bad.context["form"].errors) == {"name", "days"}
