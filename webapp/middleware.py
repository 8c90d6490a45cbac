"""Login required for every page; the API answers 401/403 itself instead of redirecting."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import middleware
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponseBase

API_PREFIX = "/api/"


class AuthenticatedRequest(HttpRequest):
    """What a page view behind this middleware receives: a signed-in user (for typing)."""

    user: User


class LoginRequiredMiddleware(middleware.LoginRequiredMiddleware):
    """Django's middleware, minus the API: DRF authenticates tokens after this runs, and
    a script deserves a 401 with a reason rather than a redirect to an HTML form."""

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: Any,
        view_kwargs: Any,
    ) -> HttpResponseBase | None:
        if request.path.startswith(API_PREFIX):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
