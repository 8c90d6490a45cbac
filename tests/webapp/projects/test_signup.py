"""Optional self sign-up (HETERPS_SIGNUP / settings.SIGNUP_OPEN): off by default, throttled
like sign-in, and it brings an invitee back to their invitation."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from webapp.projects import services
from webapp.projects.models import Membership

pytestmark = pytest.mark.django_db
GOOD = {"username": "newbie", "email": "newbie@example.com",
        "password1": "a long passphrase 42", "password2": "a long passphrase 42"}


def test_sign_up_is_closed_by_default(client: Any) -> None:
    page = client.get("/account/signup/")
    assert page.status_code == 200 and "Sign-up is closed" in page.content.decode()
    refused = client.post("/account/signup/", GOOD)
    assert refused.status_code == 403
    assert not User.objects.filter(username="newbie").exists()


def test_an_invitee_signs_up_and_comes_back_to_the_invitation(
        personas: Any, client: Any, settings: Any) -> None:
    settings.SIGNUP_OPEN = True
    invited = services.invite(personas.owner, personas.project, "newbie@example.com",
                              "member", lambda t: f"/projects/join/?token={t}")
    sent = client.get(invited.link)
    assert sent.status_code == 302 and sent["Location"].startswith("/account/signup/")
    form = client.get(sent["Location"])
    assert 'name="next"' in form.content.decode()
    made = client.post("/account/signup/", GOOD | {"next": invited.link})
    assert made.status_code == 302 and made["Location"] == invited.link
    token = invited.link.split("token=")[1]
    assert client.post("/projects/join/", {"token": token}).status_code == 302
    assert Membership.objects.get(user__username="newbie").role == "member"


def test_sign_up_refuses_a_foreign_next(client: Any, settings: Any) -> None:
    settings.SIGNUP_OPEN = True
    made = client.post("/account/signup/", GOOD | {"next": "https://evil.example/"})
    assert made.status_code == 302 and "evil" not in made["Location"]


def test_bad_sign_ups_name_the_field_and_are_throttled(client: Any, settings: Any) -> None:
    settings.SIGNUP_OPEN = True
    settings.HETERPS_LOGIN_THROTTLE = {"per_address": 3, "base_s": 60}
    statuses = []
    for _ in range(5):
        response = client.post("/account/signup/", GOOD | {"password2": "different"})
        statuses.append(response.status_code)
    assert statuses[:3] == [400, 400, 400] and statuses[-1] == 429
    assert "password" in client.post("/account/signup/", GOOD | {"password2": "x"}).content \
        .decode().lower()
    # The right form from the throttled address waits too.
    assert client.post("/account/signup/", GOOD).status_code == 429
    assert not User.objects.filter(username="newbie").exists()


def test_the_open_sign_up_form_survives_the_bad_input_battery(client: Any,
                                                              settings: Any) -> None:
    # The generated battery (tests/webapp/test_bad_input.py) sees the form closed (403);
    # open, every field gets the same values, and a refusal names the field.
    from tests.webapp.test_bad_input import _battery_for
    from webapp.accounts.signup import SignUpForm

    settings.SIGNUP_OPEN = True
    settings.HETERPS_LOGIN_THROTTLE = {"per_address": 10_000}
    problems = []
    for name, field in SignUpForm.base_fields.items():
        blank = [""] if field.required else []  # an optional e-mail may be left out
        for value in [*_battery_for(field), *blank, "\x00", "é" * 200]:
            response = client.post("/account/signup/", GOOD | {name: value})
            page = response.content.decode()
            label = str(field.label or name)
            if response.status_code != 400 or label not in page:
                problems.append(f"{name}={value[:20]!r}: {response.status_code}")
    assert problems == []
    assert not User.objects.exists()
