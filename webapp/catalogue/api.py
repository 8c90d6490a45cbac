"""REST API for the resource catalogue (read-only until the catalogue pages land)."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import serializers, viewsets

from webapp.catalogue.models import ResourceType
from webapp.projects.permissions import visible


class ResourceTypeSerializer(serializers.ModelSerializer):
    class Meta:
        model = ResourceType
        fields = [
            "id", "project", "name", "kind", "price_per_hour", "count", "memory_gb",
            "network_gbps",
        ]


class ResourceTypeViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ResourceTypeSerializer

    def get_queryset(self) -> QuerySet[ResourceType]:
        queryset = visible(self.request.user, ResourceType.objects.all())
        project = self.request.query_params.get("project")
        return queryset.filter(project_id=project) if project else queryset
