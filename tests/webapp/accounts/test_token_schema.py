"""Issue 25 item 7: the sign-in's 429 (failed passwords slow an address down,
webapp/accounts/throttle.py) is in the schema, with the body it has; so is the 429 of every
operation that authenticates API tokens (guessed keys are slowed down the same way)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_the_sign_in_429_is_documented_and_answered(
    client: Any, django_user_model: Any, settings: Any
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.HETERPS_LOGIN_THROTTLE = {"per_account_address": 1, "base_s": 60}
    user = django_user_model.objects.create_user("ada", password="lovelace-1843")
    client.force_login(user)
    schema = client.get("/api/schema/?format=json").json()
    client.logout()
    answers = schema["paths"]["/api/token/"]["post"]["responses"]
    assert answers["429"]["content"]["application/json"]["schema"]["required"] == ["detail"]
    assert "429" in schema["paths"]["/api/projects/"]["get"]["responses"]

    wrong = {"username": "ada", "password": "wrong"}
    assert client.post("/api/token/", wrong).status_code == 400
    slowed = client.post("/api/token/", wrong)
    assert slowed.status_code == 429 and slowed.json()["detail"]
    assert int(slowed["Retry-After"]) > 0
