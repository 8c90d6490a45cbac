"""Token rules: making, rotating, revoking and checking personal API tokens. Throttling
failed sign-ins is webapp.accounts.throttle."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from webapp.accounts.models import ApiToken

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MAX_DAYS = 365
DEFAULT_DAYS = 90
MAX_ACTIVE = 50  # tokens one user may hold at once


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


def sign_in_token(user: User, name: str, days: int = DEFAULT_DAYS) -> tuple[ApiToken, str]:
    """The token a password sign-in answers: signing in again with the same name rotates
    that token (revokes the user's active ones of that name), so a script that signs in
    on every run holds one token, not one per run."""
    with transaction.atomic():
        ApiToken.objects.filter(
            user_id=user.pk, name=(name or "").strip(), revoked_at__isnull=True,
        ).update(revoked_at=timezone.now())
        return create_token(user, name, days)


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
