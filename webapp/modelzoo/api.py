"""REST API for models: list, read, add from the zoo or import a layer chain."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from heterps_core import zoo
from heterps_core.zoo.sizes import sizes_of
from webapp.bounds import MAX_TEXT, api_id, filter_by_query
from webapp.modelzoo import loading, schemas, services
from webapp.modelzoo.models import RegisteredModel
from webapp.projects.permissions import Action, get_project, visible


class RegisteredModelSerializer(serializers.ModelSerializer):
    class Meta:
        model = RegisteredModel
        fields = ["id", "project", "name", "source", "zoo_name", "size", "factory",
                  "example_input", "description", "default_batch_size", "layers", "created_at"]
        read_only_fields = fields


@extend_schema_field(schemas.LAYERS)
class LayersField(serializers.JSONField):
    """A layer chain (`services.parse_chain` checks it and names the layer; JSON text of one
    is taken too)."""


class AddModelSerializer(serializers.Serializer):
    project = api_id()
    zoo_name = serializers.ChoiceField(zoo.names(), required=False,
                                       help_text="add this zoo entry, or ...")
    size = serializers.CharField(required=False, default="tiny", max_length=20)
    name = serializers.CharField(required=False, default="", max_length=80)
    # The operator's allow-list is the choice (settings.MODEL_FACTORIES), so the schema
    # lists the factories this server builds.
    factory = serializers.ChoiceField([], required=False, help_text=(
        "... or bring your own model: an allow-listed package.module:factory, or ..."))
    example_input = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=500,
        validators=[RegexValidator(schemas.EXAMPLE_PATTERN, "must be shapes such as "
                                   "dense=float32[64,13];sparse=int64[64,26]<1000")],
        help_text="the factory's forward() arguments as shapes, e.g. "
                  "dense=float32[64,13];sparse=int64[64,26]<1000 (blank: the factory's own)")
    layers = LayersField(required=False)
    description = serializers.CharField(required=False, default="", max_length=MAX_TEXT)

    required_any_of = (("zoo_name",), ("factory",), ("layers",))  # one way to add a model
    # An imported chain is named (a zoo entry or a factory, taken first, name themselves);
    # a zoo entry comes in its own sizes.
    schema_rules = ({"anyOf": [{"not": {"required": ["layers"]}}, {"required": ["zoo_name"]},
                               {"required": ["factory"]}, {"required": ["name"]}]},
                    {"anyOf": [
        {"not": {"required": ["zoo_name"]}}, {"not": {"required": ["size"]}},
        *({"required": ["zoo_name"], "properties": {
            "zoo_name": {"const": name}, "size": {"enum": list(sizes_of(name))}}}
          for name in zoo.names())]},)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        allowed = loading.allowed_factories()
        factory = self.fields["factory"]
        factory.choices = allowed
        factory.error_messages["invalid_choice"] = (
            "'{input}' is not on this server's allow-list of model factories; allowed: "
            + (", ".join(allowed) or "none (HETERPS_MODEL_FACTORIES is empty)")
            + ". An operator adds one with HETERPS_MODEL_FACTORIES")

    def validate_example_input(self, value: str) -> str:
        elements = schemas.example_elements(value)
        if elements > schemas.MAX_EXAMPLE_ELEMENTS:
            raise serializers.ValidationError(
                f"a tensor of {elements:,} elements; at most {schemas.MAX_EXAMPLE_ELEMENTS:,} "
                "per tensor (the server builds the example to check forward())")
        return value


class RegisteredModelViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                             viewsets.GenericViewSet):
    serializer_class = RegisteredModelSerializer

    def get_queryset(self) -> QuerySet[RegisteredModel]:
        queryset = visible(self.request.user, RegisteredModel.objects.all())
        return filter_by_query(self.request.query_params, queryset, "project")

    @extend_schema(request=AddModelSerializer, responses={201: RegisteredModelSerializer})
    def create(self, request: Request) -> Response:
        add = AddModelSerializer(data=request.data)
        add.is_valid(raise_exception=True)
        data = add.validated_data
        project = get_project(request.user, data["project"], Action.EDIT)
        if data.get("zoo_name"):
            model = services.add_zoo_model(request.user, project, data["zoo_name"],
                                           data["size"], data["name"])
        elif data.get("factory"):
            model = services.add_factory_model(request.user, project, data["factory"],
                                               data["name"], data["example_input"],
                                               data["description"])
        elif "layers" in data:
            model = services.import_model(request.user, project, data["name"],
                                          _as_text(data["layers"]), data["description"])
        else:
            raise ValidationError({"zoo_name": "give a zoo_name, a factory, or layers "
                                               "to import"})
        return Response(RegisteredModelSerializer(model).data, status=status.HTTP_201_CREATED)


def _as_text(layers: object) -> str:
    import json

    return layers if isinstance(layers, str) else json.dumps(layers)
