"""REST API for background work: list, read, start (any kind), cancel."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.background import kinds, services
from webapp.background.models import Work
from webapp.bounds import api_id, filter_by_query
from webapp.projects.permissions import Action, get_project, visible


class WorkListSerializer(serializers.ListSerializer):
    """A page of records as plain dicts, field for field what WorkSerializer gives one
    (tests/webapp/background/test_api.py compares them): the generic path's per-field
    machinery was most of a work list's CPU under load."""

    def to_representation(self, data: Any) -> list[dict[str, Any]]:
        fields = self.child.fields
        when = {name: fields[name] for name in ("created_at", "started_at", "finished_at")}
        rows = []
        for w in data.all() if isinstance(data, QuerySet) else data:
            row = {"id": w.pk, "project": w.project_id, "kind": str(w.kind),
                   "status": str(w.status), "progress": float(w.progress),
                   "message": str(w.message), "metrics": w.metrics, "params": w.params,
                   "result": w.result, "error": str(w.error)}
            for name, field in when.items():
                value = getattr(w, name)
                row[name] = None if value is None else field.to_representation(value)
            rows.append(row)
        return rows


class WorkSerializer(serializers.ModelSerializer):
    class Meta:
        model = Work
        fields = [
            "id", "project", "kind", "status", "progress", "message", "metrics", "params",
            "result", "error", "created_at", "started_at", "finished_at",
        ]
        read_only_fields = fields
        list_serializer_class = WorkListSerializer


class KindField(serializers.ChoiceField):
    """The schema lists the kinds a client may start here; a kind a service owns (a job's
    runs) still reaches `services.start_work`, which checks its params' references first
    (a foreign id gets the missing-id answer) and then refuses it, saying where it starts."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and data in kinds.names():
            return data
        return super().to_internal_value(data)


class StartWorkSerializer(serializers.Serializer):
    project = api_id()
    kind = KindField(choices=[])
    params = serializers.JSONField()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = kinds.startable_choices()

    @classmethod
    def schema_rules(cls) -> tuple[dict[str, Any], ...]:
        """`params` per kind, from the registry (a kind states its own: `params_schema`)."""
        return ({"oneOf": [
            {"properties": {"kind": {"enum": [name]}, "params": schema}}
            for name, schema in kinds.params_schemas().items()]},)


class WorkViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = WorkSerializer

    def get_queryset(self) -> QuerySet[Work]:
        queryset = visible(self.request.user, Work.objects.all())
        return filter_by_query(self.request.query_params, queryset, "project")

    @extend_schema(request=StartWorkSerializer, responses={201: WorkSerializer})
    def create(self, request: Request) -> Response:
        start = StartWorkSerializer(data=request.data)
        start.is_valid(raise_exception=True)
        data = start.validated_data
        project = get_project(request.user, data["project"], Action.EDIT)
        work = services.start_work(request.user, project, data["kind"], data["params"])
        return Response(WorkSerializer(work).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: WorkSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        work = services.cancel_work(request.user, self.get_object())
        return Response(WorkSerializer(work).data)
