from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from webapp.accounts import services, throttle


class TokenForm(forms.Form):
    name = forms.CharField(max_length=80, help_text="where you use it, e.g. laptop CLI")
    days = forms.IntegerField(min_value=1, max_value=services.MAX_DAYS,
                              initial=services.DEFAULT_DAYS, label="Expires after (days)")


class ThrottledSignIn:
    """The sign-in throttle around a Django authentication form's clean(): attempts from
    an address that must wait are refused unchecked; failures and successes are counted
    (webapp.accounts.throttle). Other addresses are not affected."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        address = throttle.client_address(self.request.META) if self.request else ""
        try:
            throttle.guard(username, address)
        except throttle.Throttled as exc:
            raise ValidationError("%(message)s", code="throttled",
                                  params={"message": exc.message}) from None
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError:
            throttle.record_failure(username, address)
            raise
        throttle.record_success(username, address)
        return cleaned


class ThrottledAuthenticationForm(ThrottledSignIn, AuthenticationForm):
    """The login page's form."""


class ThrottledAdminAuthenticationForm(ThrottledSignIn, AdminAuthenticationForm):
    """/admin/login/'s form (its own page, so guesses there count too)."""
