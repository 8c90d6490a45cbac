"""The user's own page for personal API tokens (create, name, rotate, revoke) and password."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_POST

from webapp.accounts import services
from webapp.accounts.forms import ThrottledAuthenticationForm, TokenForm
from webapp.accounts.models import ApiToken
from webapp.middleware import AuthenticatedRequest


def tokens(request: AuthenticatedRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    new_key = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                _, new_key = services.create_token(request.user, form.cleaned_data["name"],
                                                   form.cleaned_data["days"])
            except ValidationError as exc:
                for field, problems in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, problems)
                status = 400
            else:
                form = TokenForm()
        else:
            status = 400
    return _render(request, form, new_key, status)


@require_POST
def revoke(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    token = services.revoke_token(request.user, pk)
    messages.success(request, f"Revoked token {token.name} ({token.prefix}…).")
    return redirect("accounts:tokens")


@require_POST
def rotate(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    token, key = services.rotate_token(request.user, pk)
    messages.success(request, f"Rotated {token.name}: the old key no longer works.")
    return _render(request, TokenForm(), key, 200)


def _render(request: AuthenticatedRequest, form: TokenForm, new_key: str | None,
            status: int) -> HttpResponse:
    context = {"form": form, "new_key": new_key,
               "tokens": ApiToken.objects.filter(user_id=request.user.pk)}
    return render(request, "accounts/tokens.html", context, status=status)


class LoginView(auth_views.LoginView):
    authentication_form = ThrottledAuthenticationForm


class PasswordChangeView(auth_views.PasswordChangeView):
    template_name = "accounts/password.html"
    success_url = reverse_lazy("accounts:tokens")

    def form_valid(self, form):  # type: ignore[no-untyped-def]
        response = super().form_valid(form)
        messages.success(self.request, "Password changed; your API tokens were revoked.")
        return response
