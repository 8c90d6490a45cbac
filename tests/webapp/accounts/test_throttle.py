"""Issue 25 item 2: failed sign-ins slow the address that makes them (per account and
address, and per address), with delays that grow; they never lock an account, so the
owner's right password from their own address works while an attacker's is refused.

The counts live in the database (webapp.accounts.models.FailedLogin): run these with
DATABASE_URL for PostgreSQL as well as in the embedded default."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from webapp.accounts import throttle
from webapp.accounts.models import FailedLogin

pytestmark = pytest.mark.django_db

OWNER_AT = "192.0.2.10"
ATTACKER_AT = "198.51.100.66"


@pytest.fixture
def admin(django_user_model: Any, settings: Any) -> Any:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # A first delay far longer than a request on a loaded machine: "refused now" never
    # depends on how fast the test runs (the documented defaults: test_the_defaults).
    settings.HETERPS_LOGIN_THROTTLE = {"base_s": 30}
    return django_user_model.objects.create_superuser("admin", password="right-horse-battery")


def _form(client: Any, password: str, address: str, username: str = "admin") -> Any:
    return client.post(reverse("login"), {"username": username, "password": password},
                       REMOTE_ADDR=address)


def _token(client: Any, password: str, address: str, username: str = "admin") -> Any:
    return client.post("/api/token/", {"username": username, "password": password},
                       REMOTE_ADDR=address)


def _age_failures(seconds: float) -> None:
    """As if the recorded failures had happened `seconds` earlier (no sleeping)."""
    for row in FailedLogin.objects.all():
        row.at -= timedelta(seconds=seconds)
        row.save(update_fields=["at"])


def test_an_attacker_cannot_lock_the_administrator_out_of_the_api(client: Any,
                                                                  admin: Any) -> None:
    for _ in range(30):
        assert _token(client, "guess", ATTACKER_AT).status_code in (400, 429)
    assert _token(client, "right-horse-battery", ATTACKER_AT).status_code == 429
    owner = _token(client, "right-horse-battery", OWNER_AT)
    assert owner.status_code == 200, owner.content
    assert owner.json()["token"]


def test_an_attacker_cannot_lock_the_administrator_out_of_the_login_page(client: Any,
                                                                         admin: Any) -> None:
    for _ in range(30):
        _form(client, "guess", ATTACKER_AT)
    refused = _form(client, "right-horse-battery", ATTACKER_AT)
    assert refused.status_code == 200 and "_auth_user_id" not in client.session
    assert b"Too many failed sign-ins" in refused.content
    assert _form(client, "right-horse-battery", OWNER_AT).status_code == 302
    assert client.session["_auth_user_id"] == str(admin.pk)


def test_delays_grow_with_each_failure_and_wear_off(client: Any, admin: Any) -> None:
    rule = throttle.policy().pair
    for _ in range(rule.free):
        assert _token(client, "guess", ATTACKER_AT).status_code == 400
    waits = []
    for _ in range(4):
        refused = _token(client, "guess", ATTACKER_AT)
        assert refused.status_code == 429
        wait = int(refused["Retry-After"])
        detail = refused.json()["detail"]
        spoken = f"{wait} seconds" if wait < 120 else f"{-(-wait // 60)} minutes"
        assert detail == (f"Too many failed sign-ins for this account from your address: "
                          f"try again in {spoken}."), detail
        waits.append(wait)
        _age_failures(wait)  # the attacker waits exactly as long as told ...
        assert _token(client, "guess", ATTACKER_AT).status_code == 400  # ... and may try
    assert waits == sorted(waits) and waits[-1] >= 4 * waits[0], waits
    assert waits[-1] <= rule.cap_s
    # Waiting is not a lock-out: after the delay the right password works from there too.
    _age_failures(throttle.policy().pair.cap_s)
    assert _token(client, "right-horse-battery", ATTACKER_AT).status_code == 200


def test_an_address_guessing_many_accounts_is_slowed(client: Any, admin: Any) -> None:
    rule = throttle.policy().address
    for i in range(rule.free):
        assert _token(client, "guess", ATTACKER_AT, username=f"user{i}").status_code == 400
    refused = _token(client, "guess", ATTACKER_AT, username="someone-new")
    assert refused.status_code == 429
    assert "from your address" in refused.json()["detail"]
    assert _token(client, "right-horse-battery", OWNER_AT).status_code == 200


def test_a_success_clears_only_its_own_address_failures(client: Any, admin: Any) -> None:
    for _ in range(4):
        _token(client, "guess", OWNER_AT)
        _token(client, "guess", ATTACKER_AT)
    assert _token(client, "right-horse-battery", OWNER_AT).status_code == 200
    assert FailedLogin.objects.filter(address=OWNER_AT).count() == 0
    assert FailedLogin.objects.filter(address=ATTACKER_AT).count() == 4


def test_the_owners_own_typos_are_slowed_not_locked(client: Any, admin: Any) -> None:
    for _ in range(throttle.policy().pair.free):
        _form(client, "typo", OWNER_AT)
    slowed = _form(client, "right-horse-battery", OWNER_AT)
    assert b"try again in" in slowed.content and "_auth_user_id" not in client.session
    _age_failures(throttle.policy().pair.base_s)
    assert _form(client, "right-horse-battery", OWNER_AT).status_code == 302


def test_one_ipv6_network_counts_as_one_address(client: Any, admin: Any) -> None:
    rule = throttle.policy().address
    for i in range(rule.free):
        # A different address in the same /64 for every guess.
        _token(client, "guess", f"2001:db8:5:6::{i + 1:x}", username=f"user{i}")
    assert _token(client, "guess", "2001:db8:5:6:ffff::1").status_code == 429
    assert _token(client, "right-horse-battery", "2001:db8:5:7::1").status_code == 200


def test_the_throttle_api_for_other_sign_in_forms(admin: Any) -> None:
    """The public functions other sign-in paths (self sign-up) call."""
    assert throttle.check("admin", ATTACKER_AT) is None
    for _ in range(throttle.policy().pair.free):
        throttle.record_failure("admin", ATTACKER_AT)
    wait = throttle.check("admin", ATTACKER_AT)
    assert wait is not None and 0 < wait <= throttle.policy().pair.base_s
    assert throttle.check("admin", OWNER_AT) is None
    with pytest.raises(throttle.Throttled) as refused:
        throttle.guard("admin", ATTACKER_AT)
    assert refused.value.retry_after_s == wait and "try again in" in refused.value.message
    throttle.record_success("admin", ATTACKER_AT)
    assert throttle.check("admin", ATTACKER_AT) is None


def test_the_defaults(settings: Any) -> None:
    """As docs/accounts.md states them."""
    settings.HETERPS_LOGIN_THROTTLE = {}
    rule = throttle.policy()
    assert (rule.pair.free, rule.address.free) == (5, 20)
    assert (rule.pair.base_s, rule.pair.cap_s, rule.window) == (2, 900, timedelta(days=1))
    delays = [rule.pair.delay_s(n) for n in range(4, 16)]
    assert delays == [0, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900]


def test_old_failures_are_forgotten(admin: Any) -> None:
    for _ in range(3):
        throttle.record_failure("admin", ATTACKER_AT)
    FailedLogin.objects.update(at=timezone.now() - throttle.policy().window - timedelta(1))
    throttle.record_failure("admin", ATTACKER_AT)
    assert FailedLogin.objects.count() == 1


def test_the_admin_login_page_is_throttled_too(client: Any, admin: Any) -> None:
    """/admin/login/ has a form of its own: guessing there is slowed the same way."""
    for _ in range(throttle.policy().pair.free):
        client.post("/admin/login/", {"username": "admin", "password": "guess"},
                    REMOTE_ADDR=ATTACKER_AT)
    refused = client.post("/admin/login/", {"username": "admin",
                                             "password": "right-horse-battery"},
                          REMOTE_ADDR=ATTACKER_AT)
    assert refused.status_code == 200 and "_auth_user_id" not in client.session
    assert b"Too many failed sign-ins" in refused.content
    assert FailedLogin.objects.filter(username="admin", address=ATTACKER_AT).count() == 5
    owner = client.post("/admin/login/", {"username": "admin",
                                          "password": "right-horse-battery"},
                        REMOTE_ADDR=OWNER_AT)
    assert owner.status_code == 302 and client.session["_auth_user_id"] == str(admin.pk)
