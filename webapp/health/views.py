from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

from webapp.health import services


@login_not_required  # load balancers and .ci/run probe it without a session
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    report = services.report()
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)
