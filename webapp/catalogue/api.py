"""REST API for a project's resource types: list, read, create (optionally from a hardware
catalogue entry), update, delete. Writes go through `webapp.catalogue.services`."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.bounds import api_id
from webapp.catalogue import services
from webapp.catalogue.models import ResourceType
from webapp.projects.permissions import Action, get_owned, get_project, valid_id, visible


class ResourceTypeSerializer(serializers.ModelSerializer):
    class Meta:
        model = ResourceType
        fields = [
            "id", "project", "name", "kind", "price_per_hour", "count", "memory_gb",
            "network_gbps", "precision",
        ]
        read_only_fields = ["id", "project"]


class WriteResourceTypeSerializer(serializers.Serializer):
    """Types only; the bounds and rules are the service's (the same as pages and admin)."""

    project = api_id(required=False, help_text="on create only")
    template = serializers.CharField(required=False, allow_blank=True, max_length=120, help_text=(
        "a hardware-catalogue entry (GET /api/resource-types/catalogue/ lists them) whose "
        "price and specs fill the fields not given"))
    name = serializers.CharField(required=False, max_length=services.NAME_MAX)
    kind = serializers.CharField(required=False, max_length=30)
    price_per_hour = serializers.FloatField(required=False)
    count = serializers.IntegerField(required=False)
    memory_gb = serializers.FloatField(required=False)
    network_gbps = serializers.FloatField(required=False)
    precision = serializers.CharField(required=False, allow_blank=True, max_length=8, help_text=(
        "GPU types: fp32, tf32 or amp; blank: the hardware entry's own"))


class ResourceTypeViewSet(viewsets.ModelViewSet):
    serializer_class = ResourceTypeSerializer

    def get_queryset(self) -> QuerySet[ResourceType]:
        queryset = visible(self.request.user, ResourceType.objects.all())
        project = self.request.query_params.get("project")
        if project is None:
            return queryset
        project_id = valid_id(project)
        if project_id is None:
            raise exceptions.ValidationError({"project": ["must be a project id"]})
        return queryset.filter(project_id=project_id)

    def _own(self, pk: Any) -> ResourceType:
        return get_owned(self.request.user, ResourceType.objects.all(), valid_id(pk) or 0,
                         Action.EDIT)

    @extend_schema(request=WriteResourceTypeSerializer, responses={201: ResourceTypeSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = WriteResourceTypeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        if valid_id(data.get("project")) is None:
            raise exceptions.ValidationError({"project": ["must be a project id"]})
        project = get_project(request.user, data.pop("project"), Action.EDIT)
        resource_type = services.create(request.user, project, data)
        return Response(ResourceTypeSerializer(resource_type).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=WriteResourceTypeSerializer, responses={200: ResourceTypeSerializer})
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        resource_type = self._own(kwargs.get("pk"))
        body = WriteResourceTypeSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        data = {k: v for k, v in body.validated_data.items() if k in services.ALL_FIELDS}
        resource_type = services.update(request.user, resource_type, data)
        return Response(ResourceTypeSerializer(resource_type).data)

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.update(request, *args, **kwargs)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        resource_type = self._own(kwargs.get("pk"))
        services.delete(request.user, resource_type)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses={200: {"type": "array", "items": {"type": "object"}}})
    @action(detail=False, methods=["get"])
    def catalogue(self, request: Request) -> Response:
        """The hardware catalogue a resource type can start from (list prices, specs)."""
        return Response(services.hardware_catalogue())
