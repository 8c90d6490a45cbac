"""Pages that start work answer 503 with a sentence when the task broker is down.

The API gets the same from DRF (`services.BrokerUnavailable` is an APIException); a form
post (plan, profile, run) would otherwise end in a 500. The record is already failed with
the reason by then, so nothing stays queued.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from webapp.background.services import BrokerUnavailable


class BrokerUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not isinstance(exc, BrokerUnavailable):
            return None
        return HttpResponse(
            f"<!doctype html><title>Task queue unavailable</title><h1>Task queue unavailable"
            f"</h1><p>{exc.detail} Try again in a minute.</p>",
            status=503, headers={"Retry-After": "60"},
        )
