"""Token and sign-in rules: making, rotating, revoking and checking personal API tokens, and
throttling repeated failed sign-ins per account and per address.

The throttle counts live in the database, so every server process (and the embedded
default) shares them without a cache server.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from webapp.accounts.models import ApiToken, FailedLogin

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MAX_DAYS = 365
DEFAULT_DAYS = 90
MAX_ACTIVE = 50  # tokens one user may hold at once


@dataclass(frozen=True)
class Throttle:
    per_user: int  # failures of one account within `window`
    per_address: int  # failures from one address within `window`
    window: timedelta


def throttle() -> Throttle:
    conf = getattr(settings, "HETERPS_LOGIN_THROTTLE", {})
    return Throttle(per_user=conf.get("per_user", 5), per_address=conf.get("per_address", 20),
                    window=timedelta(seconds=conf.get("window_s", 900)))


class Throttled(Exception):
    """Too many failed sign-ins: `message` says for whom and for how long."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_token(user: User, name: str, days: int = DEFAULT_DAYS
                 ) -> tuple[ApiToken, str]:
    """A new token and its key (shown to the user once, never stored)."""
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "give the token a name (where it is used)"})
    if len(name) > 80:
        raise ValidationError({"name": "must be at most 80 characters"})
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise ValidationError({"days": f"must be a whole number of days from 1 to {MAX_DAYS}"})
    active = ApiToken.objects.filter(user=user, revoked_at__isnull=True,
                                     expires_at__gt=timezone.now()).count()
    if active >= MAX_ACTIVE:
        raise ValidationError({"name": f"you hold {active} active tokens; revoke one first"})
    key = secrets.token_urlsafe(30)
    token = ApiToken.objects.create(user=user, name=name, key_hash=hash_key(key),
                                    prefix=key[:8],
                                    expires_at=timezone.now() + timedelta(days=days))
    return token, key


def own_token(user: User, pk: object) -> ApiToken:
    """One of the user's tokens; someone else's or a missing one is a 404."""
    from webapp.bounds import valid_id

    token = ApiToken.objects.filter(user_id=user.pk, pk=valid_id(pk) or 0).first()
    if token is None:
        raise Http404("No such token.")
    return token


def revoke_token(user: User, pk: object) -> ApiToken:
    token = own_token(user, pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def rotate_token(user: User, pk: object) -> tuple[ApiToken, str]:
    """Revoke the token and make a new one with its name and lifetime."""
    with transaction.atomic():
        old = revoke_token(user, pk)
        days = max(1, min(MAX_DAYS, (old.expires_at - old.created_at).days or DEFAULT_DAYS))
        return create_token(user, old.name, days)


def revoke_all(user: User) -> int:
    """Every token of the user (a password change calls this), legacy ones included."""
    count = ApiToken.objects.filter(user_id=user.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now())
    from django.apps import apps

    if apps.is_installed("rest_framework.authtoken"):
        from rest_framework.authtoken.models import Token

        count += Token.objects.filter(user_id=user.pk).delete()[0]
    return count


def user_for_key(key: str) -> User | None:
    """The active token's user (and note its use), else None."""
    token = ApiToken.objects.select_related("user").filter(key_hash=hash_key(key)).first()
    if token is None or not token.active or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


# Sign-in throttling.
def check_throttle(username: str, address: str) -> None:
    """Raise Throttled while the account or the address has too many recent failures."""
    rule = throttle()
    since = timezone.now() - rule.window
    recent = FailedLogin.objects.filter(at__gte=since)
    minutes = max(1, int(rule.window.total_seconds() // 60))
    if username and recent.filter(username=username[:150]).count() >= rule.per_user:
        raise Throttled(f"Too many failed sign-ins for this account: try again in {minutes} "
                        f"minutes, or ask an administrator.", int(rule.window.total_seconds()))
    if address and recent.filter(address=address).count() >= rule.per_address:
        raise Throttled(f"Too many failed sign-ins from your address: try again in {minutes} "
                        f"minutes.", int(rule.window.total_seconds()))


def record_failure(username: str, address: str) -> None:
    FailedLogin.objects.create(username=(username or "")[:150], address=(address or "")[:45])
    # Keep the table small: nothing older than a day matters.
    FailedLogin.objects.filter(at__lt=timezone.now() - timedelta(days=1)).delete()


def clear_failures(username: str) -> None:
    FailedLogin.objects.filter(username=(username or "")[:150]).delete()


def client_address(meta: dict[str, object]) -> str:
    """The caller's address. Behind the proxy the deployment names (HETERPS_TRUSTED_PROXY),
    the last hop it added in X-Forwarded-For; otherwise REMOTE_ADDR (a client can forge the
    header, so it is not trusted by default)."""
    if getattr(settings, "HETERPS_TRUSTED_PROXY", False):
        forwarded = str(meta.get("HTTP_X_FORWARDED_FOR", ""))
        if forwarded:
            return forwarded.split(",")[-1].strip()[:45]
    return str(meta.get("REMOTE_ADDR", ""))[:45]
