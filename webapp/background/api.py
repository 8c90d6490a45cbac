"""REST API for background work: list, read, start (any kind), cancel."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.background import kinds, services
from webapp.background.models import Work
from webapp.bounds import api_id, filter_by_query
from webapp.projects.permissions import Action, get_project, visible


class WorkSerializer(serializers.ModelSerializer):
    class Meta:
        model = Work
        fields = [
            "id", "project", "kind", "status", "progress", "message", "metrics", "params",
            "result", "error", "created_at", "started_at", "finished_at",
        ]
        read_only_fields = fields


class StartWorkSerializer(serializers.Serializer):
    project = api_id()
    kind = serializers.ChoiceField(choices=[])
    params = serializers.JSONField()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = kinds.choices()


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
        try:
            work = services.start_work(request.user, project, data["kind"], data["params"])
        except ValidationError as exc:
            raise exceptions.ValidationError(exc.message_dict) from exc
        return Response(WorkSerializer(work).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: WorkSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        work = services.cancel_work(request.user, self.get_object())
        return Response(WorkSerializer(work).data)
