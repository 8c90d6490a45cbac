"""REST API for clusters, planning requests, their per-scheduler results and what-if."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from heterps_core.provenance import to_json
from webapp.api_schema import requires
from webapp.bounds import api_id, api_number, filter_by_query
from webapp.catalogue.models import ResourceType
from webapp.modelzoo.models import RegisteredModel
from webapp.planning import results, services
from webapp.planning.models import Cluster, PlanningRequest, PlanResult
from webapp.projects.permissions import Action, get_owned, get_project, valid_id, visible


class ClusterSerializer(serializers.ModelSerializer):
    class Meta:
        model = Cluster
        fields = ["id", "project", "name", "description", "resource_types", "created_at"]
        read_only_fields = ["id", "created_at"]


PICK_ONE = {"min_length": "pick at least one resource type"}


class CreateClusterSerializer(serializers.Serializer):
    project = api_id()
    name = serializers.CharField(max_length=80)
    resource_types = serializers.ListField(child=api_id(), min_length=1, max_length=1000,
                                           error_messages=PICK_ONE)
    description = serializers.CharField(required=False, default="", allow_blank=True,
                                        max_length=500)


class UpdateClusterSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80, required=False)
    resource_types = serializers.ListField(child=api_id(), min_length=1, max_length=1000,
                                           required=False, error_messages=PICK_ONE)
    description = serializers.CharField(required=False, allow_blank=True, max_length=500)


class PlanResultSerializer(serializers.ModelSerializer):
    cost_per_million_samples = serializers.FloatField(read_only=True, allow_null=True)
    figure_tiers = serializers.SerializerMethodField(
        help_text="per resource type the plan uses: where its figures come from (tier, "
                  "label, measured, band of estimated figures)")

    class Meta:
        model = PlanResult
        fields = ["id", "project", "request", "scheduler", "plan", "feasible", "cost_per_hour",
                  "cost_per_million_samples", "throughput", "solve_time_s", "gap_to_exact",
                  "chosen", "error", "figure_tiers"]
        read_only_fields = fields

    def get_figure_tiers(self, result: PlanResult) -> dict[str, dict[str, Any]]:
        return to_json(results.plan_figures(result))


class OnDemandOptimumSerializer(serializers.Serializer):
    feasible = serializers.BooleanField()
    cost_per_hour = serializers.FloatField(allow_null=True, help_text="$ per hour, estimate")
    reason = serializers.CharField(allow_blank=True, allow_null=True)


class PlanningRequestSerializer(serializers.ModelSerializer):
    results = PlanResultSerializer(many=True, read_only=True)
    figure_tiers = serializers.SerializerMethodField(
        help_text="per resource type of the cluster: where its figures come from")
    on_demand_optimum = OnDemandOptimumSerializer(
        read_only=True, allow_null=True,
        help_text="with spot offers: the exact optimum with none (the spot saving's yardstick)")

    class Meta:
        model = PlanningRequest
        fields = ["id", "project", "model", "cluster", "profile_run", "batch_size",
                  "throughput_target", "samples", "max_hourly_cost", "max_total_cost",
                  "schedulers", "budget_s", "seed", "work",
                  "instance", "frontier", "created_at", "results", "figure_tiers",
                  "on_demand_optimum"]
        read_only_fields = fields

    def get_figure_tiers(self, request: PlanningRequest) -> dict[str, dict[str, Any]]:
        return to_json(results.figure_tiers(request))


class StartPlanningSerializer(serializers.Serializer):
    model = api_id()
    cluster = api_id()
    throughput_target = api_number("throughput_target")
    schedulers = serializers.ListField(child=serializers.ChoiceField([]), required=False,
                                       min_length=1, max_length=50)
    batch_size = api_number("batch_size", required=False)
    samples = api_number("samples", required=False)
    budget_s = api_number("budget_s", required=False, default=5.0,
                          max_value=services.MAX_BUDGET_S)
    max_hourly_cost = api_number("max_hourly_cost", required=False, help_text=(
        "optional cap, $ per hour: the cheapest plan within it, or 'no plan: the target "
        "needs at least $X/h'"))
    max_total_cost = api_number("max_total_cost", required=False,
                                help_text="optional cap, $ for the whole job; needs samples")

    schema_rules = (requires("max_total_cost", "samples"),)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The registry's schedulers are the choice: the schema lists them.
        self.fields["schedulers"].child.choices = services.available_schedulers()


class WhatIfSerializer(serializers.Serializer):
    resource = serializers.CharField(max_length=120)
    price_per_hour = api_number("price_per_hour", required=False, allow_null=True, default=None)
    count = api_number("count", required=False, allow_null=True, default=None)

    # A new price or a new count (or both): the service refuses neither, naming the price.
    schema_rules = ({"anyOf": [{"required": [f], "properties": {f: {"not": {"type": "null"}}}}
                               for f in ("price_per_hour", "count")]},)


def _scoped(request: Request, queryset: QuerySet) -> QuerySet:
    return filter_by_query(request.query_params, visible(request.user, queryset), "project")


class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = ClusterSerializer

    def get_queryset(self) -> QuerySet[Cluster]:
        return _scoped(self.request, Cluster.objects.prefetch_related("resource_types"))

    @extend_schema(request=CreateClusterSerializer, responses={201: ClusterSerializer})
    def create(self, request: Request) -> Response:
        serializer = CreateClusterSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        project = get_project(request.user, data["project"], Action.EDIT)
        # Another project's type is answered like a missing one: callers learn nothing.
        types = list(ResourceType.objects.filter(project=project, pk__in=data["resource_types"]))
        if len(types) != len(set(data["resource_types"])):
            raise exceptions.ValidationError(
                {"resource_types": ["must name resource types of this project"]})
        cluster = services.create_cluster(request.user, project, data["name"], types,
                                          data["description"])
        return Response(ClusterSerializer(cluster).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=UpdateClusterSerializer, responses={200: ClusterSerializer})
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        cluster = get_owned(request.user, Cluster.objects.all(), valid_id(pk) or 0, Action.EDIT)
        change = UpdateClusterSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        data = change.validated_data
        types = list(cluster.resource_types.all())
        if "resource_types" in data:
            types = list(ResourceType.objects.filter(project_id=cluster.project_id,
                                                     pk__in=data["resource_types"]))
            if len(types) != len(set(data["resource_types"])):
                raise exceptions.ValidationError(
                    {"resource_types": ["must name resource types of this project"]})
        cluster = services.update_cluster(
            request.user, cluster, data.get("name", cluster.name), types,
            data.get("description", cluster.description))
        return Response(ClusterSerializer(cluster).data)

    def destroy(self, request: Request, pk: str | None = None) -> Response:
        cluster = get_owned(request.user, Cluster.objects.all(), valid_id(pk) or 0, Action.EDIT)
        services.delete_cluster(request.user, cluster)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PlanningRequestViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                             viewsets.GenericViewSet):
    serializer_class = PlanningRequestSerializer

    def get_queryset(self) -> QuerySet[PlanningRequest]:
        return _scoped(self.request, PlanningRequest.objects.prefetch_related("results"))

    @extend_schema(request=StartPlanningSerializer, responses={201: PlanningRequestSerializer})
    def create(self, request: Request) -> Response:
        start = StartPlanningSerializer(data=request.data)
        start.is_valid(raise_exception=True)
        data = start.validated_data
        model = get_owned(request.user, RegisteredModel.objects.all(), data["model"], Action.EDIT)
        cluster = get_owned(request.user, Cluster.objects.all(), data["cluster"], Action.EDIT)
        planning = services.start_planning(
            request.user, model, cluster, data["throughput_target"],
            data.get("schedulers") or services.default_schedulers(),
            batch_size=data.get("batch_size"), samples=data.get("samples"),
            budget_s=data["budget_s"], max_hourly_cost=data.get("max_hourly_cost"),
            max_total_cost=data.get("max_total_cost"))
        return Response(PlanningRequestSerializer(planning).data, status=status.HTTP_201_CREATED)


class PlanResultViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                        viewsets.GenericViewSet):
    serializer_class = PlanResultSerializer

    def get_queryset(self) -> QuerySet[PlanResult]:
        return _scoped(self.request, PlanResult.objects.select_related("request"))

    @extend_schema(request=WhatIfSerializer, responses={200: dict})
    @action(detail=True, methods=["post"], url_path="what-if")
    def what_if(self, request: Request, pk: str | None = None) -> Response:
        change = WhatIfSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        data = change.validated_data
        answer = services.run_what_if(request.user, self.get_object(), data["resource"],
                                      data["price_per_hour"], data["count"])
        return Response(answer)
