"""Issue 25 item 5: `POST /api/token/` answers 200 (its documented code) and signing in
again with the same token name rotates that token instead of piling up new ones, so a
script signing in on every run is never refused for holding too many tokens."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.accounts import services
from webapp.accounts.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(django_user_model: Any, settings: Any) -> Any:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return django_user_model.objects.create_user("ada", password="lovelace-1843")


def _sign_in(client: Any, **extra: Any) -> Any:
    return client.post("/api/token/", {"username": "ada", "password": "lovelace-1843",
                                       **extra})


def _works(client: Any, key: str) -> bool:
    return bool(client.get("/api/projects/",
                           HTTP_AUTHORIZATION=f"Token {key}").status_code == 200)


def test_sign_in_answers_200_with_the_key(client: Any, ada: Any) -> None:
    answer = _sign_in(client, name="laptop", days=7)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["name"] == "laptop" and body["state"] == "active" and body["token"]


def test_a_script_signing_in_every_run_is_never_refused(client: Any, ada: Any) -> None:
    keys = []
    for _ in range(services.MAX_ACTIVE + 10):
        answer = _sign_in(client)
        assert answer.status_code == 200, answer.content
        keys.append(answer.json()["token"])
    active = ApiToken.objects.filter(user=ada, revoked_at__isnull=True)
    assert [t.name for t in active] == ["api"]
    assert _works(client, keys[-1]) and not _works(client, keys[-2])


def test_the_same_name_rotates_only_that_token(client: Any, ada: Any) -> None:
    ci = _sign_in(client, name="ci").json()
    laptop = _sign_in(client, name="laptop").json()
    again = _sign_in(client, name="ci").json()
    assert again["id"] != ci["id"]
    assert not _works(client, ci["token"])
    assert _works(client, again["token"]) and _works(client, laptop["token"])
    states = dict(ApiToken.objects.filter(user=ada).values_list("id", "revoked_at"))
    assert states[ci["id"]] is not None and states[laptop["id"]] is None


def test_another_users_token_of_the_same_name_is_untouched(client: Any, ada: Any,
                                                           django_user_model: Any) -> None:
    bob = django_user_model.objects.create_user("bob", password="bob-password-1")
    bobs = client.post("/api/token/", {"username": "bob", "password": "bob-password-1",
                                       "name": "ci"}).json()
    _sign_in(client, name="ci")
    assert _works(client, bobs["token"])
    assert ApiToken.objects.get(pk=bobs["id"]).user == bob


def test_the_schema_documents_200(client: Any, ada: Any) -> None:
    client.force_login(ada)
    schema = client.get("/api/schema/?format=json").json()
    responses = schema["paths"]["/api/token/"]["post"]["responses"]
    assert "200" in responses and "201" not in responses
