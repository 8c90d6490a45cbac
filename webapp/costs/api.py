"""REST API for the cost report: `GET /api/costs/?month=YYYY-MM&project=ID`."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.bounds import MAX_ID, query_id
from webapp.costs import services
from webapp.projects.permissions import get_project

# What the report's month parser takes: 1970-01 to 2999-12.
MONTH_PATTERN = r"^(19[7-9]\d|2\d{3})-(0[1-9]|1[0-2])$"


class CostReportView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("month", {"type": "string", "pattern": MONTH_PATTERN},
                                     description="YYYY-MM, 1970 to 2999 (default: now)"),
                    OpenApiParameter("project", {"type": "integer", "minimum": 1,
                                                "maximum": MAX_ID})],
        responses={200: serializers.JSONField()},
    )
    def get(self, request: Request) -> Response:
        period = services.month(request.query_params.get("month"))
        raw = query_id(request.query_params, "project")
        project = get_project(request.user, raw).pk if raw else None
        report = services.report(request.user, period, project)
        return Response({
            "period": {"start": period.start.isoformat(), "end": period.end.isoformat()},
            "estimate_usd_total": report.estimate,
            "accrued_usd_total": report.accrued,
            "projects": report.by_project(),
            "jobs": [asdict(r) for r in report.rows],
        })
