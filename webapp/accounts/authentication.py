"""`Authorization: Token KEY` for the API: personal tokens (webapp.accounts.models.ApiToken),
checked for expiry and revocation; guessing keys is throttled per address like passwords.

Keys made by DRF's authtoken before personal tokens existed still work until they are
`LEGACY_DAYS` old or the user changes their password.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.apps import apps
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.request import Request

from webapp.accounts import services, throttle

LEGACY_DAYS = services.DEFAULT_DAYS


class TooManyFailures(exceptions.Throttled):
    """429 with the throttle's own sentence as `detail` (DRF's Throttled would append its
    "Expected available in N seconds." to a message that already says how long) and the
    wait in Retry-After."""

    def __init__(self, refusal: throttle.Throttled) -> None:
        super().__init__(detail=refusal.message)
        self.wait = refusal.retry_after_s  # read by DRF's handler for Retry-After


class ApiTokenAuthentication(TokenAuthentication):
    keyword = "Token"
    throttles_failures = True  # the schema documents the 429 (webapp/api_schema.py)

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        self._address = throttle.client_address(request.META)
        return super().authenticate(request)

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        user = services.user_for_key(key) or _legacy_user(key)
        if user is not None:
            return user, None
        # Only a key that fails consults the throttle: a valid key cannot be guessed (240
        # random bits), so checking an address's failures on every API request (one query
        # each, the load benchmark's hottest) protected nothing; guesses still get 429.
        address = getattr(self, "_address", "")
        try:
            throttle.guard("", address)
        except throttle.Throttled as exc:
            raise TooManyFailures(exc) from None
        throttle.record_failure("", address)
        raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")


def _legacy_user(key: str) -> Any:
    if not apps.is_installed("rest_framework.authtoken") or len(key) > 40:
        return None
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        return None
    if token.created < timezone.now() - timedelta(days=LEGACY_DAYS):
        return None
    return token.user
