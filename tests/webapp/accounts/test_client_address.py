"""Issue 25 item 3: a client cannot choose its own address. `X-Forwarded-For` is believed
only when the request comes from a proxy named in HETERPS_TRUSTED_PROXY, never by
default, both in `throttle.client_address` and in the Daphne `manage.py up` starts (which
must not rewrite the peer address from the header itself)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.waiting import wait_until
from webapp.accounts import throttle

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workers"))
from fault_helpers import free_port, manage, server_up, start_server, subprocess_env


def _meta(peer: str, forwarded: str | None = None) -> dict[str, Any]:
    meta = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return meta


def test_the_header_is_ignored_by_default(settings: Any) -> None:
    settings.HETERPS_TRUSTED_PROXY = ()
    assert throttle.client_address(_meta("198.51.100.66", "192.0.2.10")) == "198.51.100.66"


def test_the_header_is_ignored_from_a_peer_that_is_not_a_trusted_proxy(settings: Any) -> None:
    settings.HETERPS_TRUSTED_PROXY = ("10.0.0.5",)
    assert throttle.client_address(_meta("198.51.100.66", "192.0.2.10")) == "198.51.100.66"


def test_a_trusted_proxy_names_the_client_it_saw(settings: Any) -> None:
    settings.HETERPS_TRUSTED_PROXY = ("10.0.0.0/24",)
    # The client wrote the first entry itself; the proxy appended the address it saw.
    assert throttle.client_address(_meta("10.0.0.5", "6.6.6.6, 192.0.2.10")) == "192.0.2.10"
    # Two proxies in a row, both trusted: the first untrusted hop from the right.
    assert throttle.client_address(_meta("10.0.0.5", "6.6.6.6, 192.0.2.10, 10.0.0.7")
                                   ) == "192.0.2.10"
    assert throttle.client_address(_meta("10.0.0.5")) == "10.0.0.5"
    assert throttle.client_address(_meta("10.0.0.5", "not-an-address")) == "10.0.0.5"


def test_a_wrong_trusted_proxy_setting_names_the_variable(settings: Any) -> None:
    settings.HETERPS_TRUSTED_PROXY = ("10.0.0.0/24", "proxy.example")
    with pytest.raises(ImproperlyConfigured, match=r"HETERPS_TRUSTED_PROXY: 'proxy\.example'"):
        throttle.client_address(_meta("10.0.0.5", "192.0.2.10"))


def _post_token(port: int, body: dict[str, str], source: str = "127.0.0.1",
                forwarded: str | None = None) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60,
                                            source_address=(source, 0))
    headers = {"Content-Type": "application/json"}
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    try:
        connection.request("POST", "/api/token/", json.dumps(body), headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        connection.close()


CREATE_OWNER = """
from django.contrib.auth import get_user_model
get_user_model().objects.create_superuser("boss", password="right-horse-battery")
"""


SHOW_ADDRESSES = """
from webapp.accounts.models import FailedLogin
print("ADDRESSES", *FailedLogin.objects.values_list("address", flat=True).distinct())
"""


def _database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    return (f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:"
            f"{db['PORT'] or 5432}/{db['NAME']}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_served_server_does_not_take_forged_addresses(tmp_path: Path) -> None:
    """The real server: an attacker connecting directly (127.0.0.1) forges a different
    X-Forwarded-For on every guess and claims the owner's address; the owner comes through
    the trusted proxy (127.0.0.2, which appends the address it saw)."""
    owner_at = "192.0.2.10"
    services: dict[str, str] = {"HETERPS_TRUSTED_PROXY": "127.0.0.2",
                                "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    if os.environ.get("DATABASE_URL"):
        services["DATABASE_URL"] = _database_url()  # the test database, emptied after
    env = subprocess_env(tmp_path, **services)
    port = free_port()
    server = start_server(env, port, tmp_path / "server.log")
    try:
        wait_until(lambda: server_up(server, port), 180, "the server")
        manage(env, "shell", "-c", CREATE_OWNER)
        answers = [_post_token(port, {"username": f"user{i}", "password": "guess"},
                               forwarded=f"203.0.113.{i}")[0] for i in range(30)]
        # Slowed as one address (the real one), whatever each request claimed. (Not every
        # later answer need be 429: a guess after the delay is allowed and doubles it.)
        free = throttle.policy().address.free
        assert answers[:free] == [400] * free and answers.count(429) >= 5, answers
        for _ in range(20):
            code, _ = _post_token(port, {"username": "boss", "password": "guess"},
                                  forwarded=owner_at)
            assert code in (400, 429)
        out = manage(env, "shell", "-c", SHOW_ADDRESSES).splitlines()
        counted = next(line for line in out if line.startswith("ADDRESSES")).split()[1:]
        assert set(counted) == {"127.0.0.1"}, counted
        code, body = _post_token(port, {"username": "boss", "password": "right-horse-battery"},
                                 source="127.0.0.2", forwarded=f"6.6.6.6, {owner_at}")
        assert code == 200, body
        assert body["token"]
    finally:
        server.signal(signal.SIGTERM)
        try:
            server.popen.wait(30)
        finally:
            server.kill_group()


def test_up_refuses_a_wrong_trusted_proxy_before_starting(settings: Any) -> None:
    from django.core.management import CommandError, call_command

    settings.HETERPS_TRUSTED_PROXY = ("proxy.example",)
    with pytest.raises(CommandError, match=r"HETERPS_TRUSTED_PROXY: 'proxy\.example' is not"):
        call_command("up", "--no-demo", "--port", "1")
