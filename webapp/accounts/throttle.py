"""Sign-in throttling: failed sign-ins slow down the address that makes them, with delays
that double per failure; they never lock an account (issue 25 item 2).

Two counts, both kept for `window` (a day by default):

- per (account, address): `pair.free` failures are free, then each further attempt at
  that account from that address waits `pair.base_s`, twice that, ... up to `pair.cap_s`
  after the latest failure. The owner's right password from their own address is never
  held back by someone else's guesses.
- per address (any account, and unknown API token keys): the same with `address.free`.

An IPv6 address counts as its /64 network (one host usually holds a whole /64).

The failures live in the database (`FailedLogin`), so every server process, and the
embedded default, shares them without a cache server. Every sign-in path uses this
module the same way::

    address = throttle.client_address(request.META)
    throttle.guard(username, address)          # raises Throttled (message, retry_after_s)
    ... check the password ...
    throttle.record_failure(username, address)  # or record_success(username, address)

`check(username, address)` answers the wait in seconds (None: go ahead) for callers that
refuse in their own words. The client address comes from `REMOTE_ADDR`; `X-Forwarded-For`
is read only when the peer is one of the proxies in `HETERPS_TRUSTED_PROXY` (never by
default: a client can write the header itself).
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Count, Max, QuerySet
from django.utils import timezone

from webapp.accounts.models import FailedLogin

USERNAME_MAX = 150
ADDRESS_MAX = 45

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Rule:
    free: int  # failures before any delay
    base_s: float  # the first delay; each further failure doubles it
    cap_s: float  # the longest delay

    def delay_s(self, failures: int) -> float:
        if failures < self.free:
            return 0.0
        return float(min(self.cap_s, self.base_s * 2 ** min(failures - self.free, 40)))


@dataclass(frozen=True)
class Policy:
    pair: Rule  # one account from one address
    address: Rule  # one address, any account
    window: timedelta  # failures older than this are forgotten


def policy() -> Policy:
    """From settings.HETERPS_LOGIN_THROTTLE (every key optional)."""
    conf: dict[str, Any] = getattr(settings, "HETERPS_LOGIN_THROTTLE", {})
    cap = float(conf.get("cap_s", 900))
    base = float(conf.get("base_s", 2))
    return Policy(pair=Rule(int(conf.get("per_account_address", 5)), base, cap),
                  address=Rule(int(conf.get("per_address", 20)), base, cap),
                  window=timedelta(seconds=float(conf.get("window_s", 86_400))))


class Throttled(Exception):
    """Too many recent failures: `message` says from where and how long to wait."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s


def check(username: str, address: str) -> int | None:
    """Seconds the caller must wait before trying `username` from `address`, or None."""
    wait, _ = _wait(username, address)
    return wait


def guard(username: str, address: str) -> None:
    """Raise Throttled while `check` answers a wait."""
    wait, reason = _wait(username, address)
    if wait is not None:
        raise Throttled(f"Too many failed sign-ins {reason}: try again in {_spoken(wait)}.",
                        wait)


def record_failure(username: str, address: str) -> None:
    """One refused attempt (a wrong password, an unknown account or API key)."""
    FailedLogin.objects.create(username=(username or "")[:USERNAME_MAX],
                               address=address_key(address))
    # Keep the table small: nothing older than the window counts.
    FailedLogin.objects.filter(at__lt=timezone.now() - policy().window).delete()


def record_success(username: str, address: str) -> None:
    """A right password forgives that account's failures from that address only: an
    attacker signing in to their own account does not reset their address's count."""
    FailedLogin.objects.filter(username=(username or "")[:USERNAME_MAX],
                               address=address_key(address)).delete()


def _wait(username: str, address: str) -> tuple[int | None, str]:
    rule = policy()
    now = timezone.now()
    recent = FailedLogin.objects.filter(at__gte=now - rule.window)
    key = address_key(address)
    waits = []
    if username:
        mine = recent.filter(username=username[:USERNAME_MAX], address=key)
        waits.append((_rule_wait(rule.pair, mine, now), "for this account from your address"))
    waits.append((_rule_wait(rule.address, recent.filter(address=key), now),
                  "from your address"))
    wait, reason = max(waits, key=lambda w: w[0])  # a tie names the account (first)
    return (math.ceil(wait), reason) if wait > 0 else (None, "")


def _rule_wait(rule: Rule, failures: QuerySet[FailedLogin], now: Any) -> float:
    seen = failures.aggregate(n=Count("id"), last=Max("at"))
    delay = rule.delay_s(seen["n"])
    if not delay or seen["last"] is None:
        return 0.0
    return max(0.0, delay - (now - seen["last"]).total_seconds())


def _spoken(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{math.ceil(seconds / 60)} minutes"


# Client addresses.
def address_key(address: str) -> str:
    """What the counts are kept under: the address, an IPv6 one as its /64 network."""
    ip = _ip(address)
    if ip is None:
        return (address or "")[:ADDRESS_MAX]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def client_address(meta: dict[str, Any]) -> str:
    """The caller's address: REMOTE_ADDR, unless that peer is a trusted proxy; then the
    nearest X-Forwarded-For hop that is not itself a trusted proxy (hops further left
    were written by whoever the proxy received the request from, so they are not
    believed)."""
    peer = str(meta.get("REMOTE_ADDR", ""))[:ADDRESS_MAX]
    proxies = trusted_proxies()
    peer_ip = _ip(peer)
    if not proxies or peer_ip is None or not _within(peer_ip, proxies):
        return peer
    client = peer
    hops = [h.strip() for h in str(meta.get("HTTP_X_FORWARDED_FOR", "")).split(",")]
    for hop in reversed([h for h in hops if h]):
        ip = _ip(hop)
        if ip is None:
            break  # garbage from the far side: the last trusted hop is what we know
        client = str(ip)
        if not _within(ip, proxies):
            break
    return client[:ADDRESS_MAX]


def trusted_proxies() -> tuple[IpNetwork, ...]:
    """settings.HETERPS_TRUSTED_PROXY (addresses or networks, from the comma-separated
    environment variable of that name); empty by default."""
    raw = getattr(settings, "HETERPS_TRUSTED_PROXY", ())
    names = raw.split(",") if isinstance(raw, str) else list(raw or ())
    networks = []
    for name in (n.strip() for n in names):
        if not name:
            continue
        try:
            networks.append(ipaddress.ip_network(name, strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"HETERPS_TRUSTED_PROXY: {name!r} is not an IP address or network "
                f"(e.g. 10.0.0.5 or 10.0.0.0/24)") from None
    return tuple(networks)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address((text or "").strip().split("%", 1)[0])
    except ValueError:
        return None


def _within(ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
            networks: tuple[IpNetwork, ...]) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in networks)
