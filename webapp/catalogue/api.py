"""REST API for a project's resource types: list, read, create (optionally from a hardware
catalogue entry), update, delete. Writes go through `webapp.catalogue.services`."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from heterps_core.errors import InstanceError
from heterps_core.hardware import default_catalogue
from heterps_core.hardware.catalogue import KINDS, PRECISION_ALIASES, PRECISIONS
from heterps_core.limits import LIMITS
from webapp.api_schema import requires
from webapp.bounds import FiniteFloatField, api_id, api_number
from webapp.catalogue import services, validation
from webapp.catalogue.models import ResourceType
from webapp.projects.permissions import Action, get_owned, get_project, valid_id, visible


def _market_number(name: str, **kwargs: Any) -> serializers.Field:
    """api_number for a spot-offer field, which may be null (no spot offer); the schema says
    both the range and the null."""
    limit = LIMITS[name]
    schema: dict[str, Any] = {"type": "number", "format": "double", "minimum": limit.low,
                              "maximum": limit.high, "nullable": True}
    if not limit.low_inclusive:
        schema["exclusiveMinimum"] = True
    field = extend_schema_field(schema)(type(f"Nullable{name.title().replace('_', '')}Field",
                                             (FiniteFloatField,), {}))

    def in_range(value: Any) -> None:
        try:
            limit.check(value, name)
        except InstanceError as exc:
            raise serializers.ValidationError(exc.problem) from None

    kwargs.setdefault("help_text", f"{limit.unit}, {limit.describe()}; null: {SPOT_NULL}")
    return field(validators=[in_range], allow_null=True, **kwargs)


SPOT_NULL = "no spot offer (on-demand only)"


class ResourceTypeSerializer(serializers.ModelSerializer):
    price_per_hour = api_number("price_per_hour", read_only=True)
    count = api_number("count", read_only=True)
    memory_gb = api_number("memory_gb", read_only=True)
    network_gbps = api_number("network_gbps", read_only=True)
    spot_price = _market_number("spot_price", read_only=True)
    interruptions_per_hour = _market_number("interruptions_per_hour", read_only=True)
    restart_s = _market_number("restart_s", read_only=True)
    restart = serializers.SerializerMethodField(
        help_text="the restart time plans use: seconds, source (given | measured | assumed) "
                  "and where it comes from")

    class Meta:
        model = ResourceType
        fields = [
            "id", "project", "name", "kind", "price_per_hour", "count", "memory_gb",
            "network_gbps", "precision", "spot_price", "interruptions_per_hour", "restart_s",
            "restart",
        ]
        read_only_fields = ["id", "project"]

    def get_restart(self, resource_type: ResourceType) -> dict[str, Any]:
        return resource_type.restart()._asdict()


class WriteResourceTypeSerializer(serializers.Serializer):
    """Types only; the bounds and rules are the service's (the same as pages and admin)."""

    project = api_id(required=False, help_text="on create only")
    template = serializers.ChoiceField(default_catalogue().names, required=False, help_text=(
        "a hardware-catalogue entry (GET /api/resource-types/catalogue/ lists them) whose "
        "price and specs fill the fields not given"))
    name = serializers.RegexField(validation.NAME_PATTERN, required=False,
                                  max_length=services.NAME_MAX, help_text=validation.NAME_RULE)
    kind = serializers.ChoiceField(KINDS, required=False)
    price_per_hour = api_number("price_per_hour", required=False)
    count = api_number("count", required=False)
    memory_gb = api_number("memory_gb", required=False)
    network_gbps = api_number("network_gbps", required=False)
    precision = serializers.ChoiceField(
        ["", *PRECISIONS, *PRECISION_ALIASES], required=False, help_text=(
            "GPU types: fp32, tf32 or amp (bf16/fp16 read as amp); blank: the hardware "
            "entry's own"))
    spot_price = _market_number("spot_price", required=False)
    interruptions_per_hour = _market_number("interruptions_per_hour", required=False)
    restart_s = _market_number("restart_s", required=False, help_text=(
        "seconds to replace an interrupted unit; null or absent: the median start-up of "
        "the latest runs on this type (see `restart`), "
        f"{validation.DEFAULT_RESTART_S:g} assumed until one has run"))


class CreateResourceTypeSerializer(WriteResourceTypeSerializer):
    project = api_id(help_text="the project the type belongs to")

    # A catalogue template fills what is not given; without one, every figure is needed.
    required_any_of = (("template",), ("name", "kind", "price_per_hour", "count",
                                       "memory_gb", "network_gbps"))
    # A spot offer is a price with its interruption rate (and restart); a precision other
    # than fp32 is for a GPU kind, given or the template's. (An update is checked with the
    # stored type: what the two refuse together is a 409, webapp/catalogue/services.py.)
    schema_rules = (
        requires("spot_price", "interruptions_per_hour"),
        requires("interruptions_per_hour", "spot_price"),
        requires("restart_s", "spot_price"),
        {"anyOf": [
            {"not": {"required": ["precision"], "properties": {"precision": {
                "enum": [p for p in (*PRECISIONS, *PRECISION_ALIASES) if p != "fp32"]}}}},
            {"required": ["kind"], "properties": {"kind": {"enum": ["gpu"]}}},  # 3.0: no const
            {"not": {"required": ["kind"]}, "required": ["template"], "properties": {
                "template": {"enum": [name for name in default_catalogue().names
                                      if default_catalogue().get(name).kind == "gpu"]}}},
        ]},
    )


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

    @extend_schema(request=CreateResourceTypeSerializer, responses={201: ResourceTypeSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = CreateResourceTypeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
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

    # The same body as PUT (every field optional): without this the schema offered the
    # answer's serializer, with no name pattern nor kind choices.
    @extend_schema(request=WriteResourceTypeSerializer, responses={200: ResourceTypeSerializer})
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
