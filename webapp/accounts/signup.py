"""Optional self sign-up: off by default; `HETERPS_SIGNUP=1` (settings.SIGNUP_OPEN) opens
`/account/signup/`. A new account belongs to no project until an owner invites it or it
creates its own. Refused attempts count like failed sign-ins from the caller's address
(the sign-in throttle), so the form cannot be used to guess or to flood."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme

from webapp.accounts import throttle


class SignUpForm(UserCreationForm):
    email = forms.EmailField(required=False, max_length=254,
                             help_text="optional; where invitations can reach you")

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")


def signup_open(request: HttpRequest) -> dict[str, Any]:
    """Template context: whether to show the "Sign up" link."""
    return {"signup_open": settings.SIGNUP_OPEN}


@login_not_required
def signup(request: HttpRequest) -> HttpResponse:
    after = _safe_next(request)
    if not settings.SIGNUP_OPEN:
        # A closed form answers 403 to a POST, and says how to get in.
        return render(request, "accounts/signup.html", {"closed": True, "next": after},
                      status=403 if request.method == "POST" else 200)
    form = SignUpForm(request.POST or None)
    status = 200
    if request.method == "POST":
        address = throttle.client_address(request.META)
        try:
            throttle.guard("", address)
        except throttle.Throttled as exc:
            form.add_error(None, exc.message)
            response = render(request, "accounts/signup.html",
                              {"form": form, "next": after}, status=429)
            response["Retry-After"] = str(exc.retry_after_s)
            return response
        if form.is_valid():
            user = form.save()
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect(after or settings.LOGIN_REDIRECT_URL)
        throttle.record_failure("", address)
        status = 400
    return render(request, "accounts/signup.html", {"form": form, "next": after},
                  status=status)


def _safe_next(request: HttpRequest) -> str:
    after = request.POST.get("next") or request.GET.get("next") or ""
    ok = url_has_allowed_host_and_scheme(after, allowed_hosts={request.get_host()},
                                         require_https=request.is_secure())
    return after if ok else ""
