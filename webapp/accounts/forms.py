from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from webapp.accounts import services


class TokenForm(forms.Form):
    name = forms.CharField(max_length=80, help_text="where you use it, e.g. laptop CLI")
    days = forms.IntegerField(min_value=1, max_value=services.MAX_DAYS,
                              initial=services.DEFAULT_DAYS, label="Expires after (days)")


class ThrottledAuthenticationForm(AuthenticationForm):
    """The login form, refusing every attempt (the right password too) while the account
    or the address has too many recent failures."""

    error_messages = {**AuthenticationForm.error_messages, "throttled": "%(message)s"}

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        address = services.client_address(self.request.META) if self.request else ""
        try:
            services.check_throttle(username, address)
        except services.Throttled as exc:
            raise ValidationError(self.error_messages["throttled"], code="throttled",
                                  params={"message": exc.message}) from None
        try:
            cleaned = super().clean()
        except ValidationError:
            services.record_failure(username, address)
            raise
        services.clear_failures(username)
        return cleaned
