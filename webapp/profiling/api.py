"""REST API for profile runs: list, read (with per-layer results), start one."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.bounds import api_id, api_number, filter_by_query
from webapp.modelzoo.models import RegisteredModel
from webapp.profiling import services
from webapp.profiling.models import LayerResult, ProfileRun, ResourceProfile
from webapp.projects.permissions import Action, get_owned, visible


class LayerResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = LayerResult
        fields = ["index", "layer", "kind", "resource", "seconds", "source", "device",
                  "memory_gb"]
        read_only_fields = fields


class ResourceProfileSerializer(serializers.ModelSerializer):
    class Meta:
        model = ResourceProfile
        fields = ["resource", "origin", "queue", "host", "device", "measured_at", "note"]
        read_only_fields = fields


class ProfileRunSerializer(serializers.ModelSerializer):
    results = LayerResultSerializer(many=True, read_only=True)
    origins = ResourceProfileSerializer(many=True, read_only=True)
    measurement = serializers.SerializerMethodField(
        help_text="this machine's figures with their spread (the median's relative 95% "
                  "half-width) and runs, and whether they were measured under load")

    class Meta:
        model = ProfileRun
        fields = ["id", "project", "model", "work", "batch_size", "repeats", "device",
                  "measured_at", "created_at", "results", "origins", "measurement"]
        read_only_fields = fields

    def get_measurement(self, run: ProfileRun) -> dict[str, Any] | None:
        return services.measurement(run)


class StartProfileSerializer(serializers.Serializer):
    model = api_id()
    batch_size = api_number("batch_size", required=False)
    repeats = api_number("repeats", required=False, default=3)


class ProfileRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                        viewsets.GenericViewSet):
    serializer_class = ProfileRunSerializer

    def get_queryset(self) -> QuerySet[ProfileRun]:
        queryset = visible(self.request.user, ProfileRun.objects.all()).prefetch_related(
            "results", "origins")
        return filter_by_query(self.request.query_params, queryset, "model")

    @extend_schema(request=StartProfileSerializer, responses={201: ProfileRunSerializer})
    def create(self, request: Request) -> Response:
        start = StartProfileSerializer(data=request.data)
        start.is_valid(raise_exception=True)
        data = start.validated_data
        model = get_owned(request.user, RegisteredModel.objects.all(), data["model"], Action.EDIT)
        run = services.start_profile(request.user, model, data.get("batch_size"),
                                     data["repeats"])
        return Response(ProfileRunSerializer(run).data, status=status.HTTP_201_CREATED)
