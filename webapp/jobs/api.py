"""REST API for jobs: list, read, approve a plan result, cancel, restart, metric series."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.apps import apps
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from heterps_core.limits import limit
from heterps_core.provenance import to_json
from webapp.bounds import api_id, api_number, filter_by_query, query_int
from webapp.budgets import services as budgets
from webapp.jobs import figures, recovery, replan, runners, services
from webapp.jobs.models import Job, Runner
from webapp.projects.api import BudgetSerializer
from webapp.projects.permissions import Action, get_owned, visible
from webapp.refusals import by_state

OPTIONS = "options."


class JobSerializer(serializers.ModelSerializer):
    status = serializers.CharField(read_only=True)
    # Views of `options` (the runner's validated options, the core's names).
    sync_mode = serializers.CharField(read_only=True)
    sync_params = serializers.DictField(read_only=True)
    dataparallel = serializers.DictField(read_only=True)
    binding = serializers.DictField(read_only=True)
    micro_batches = serializers.IntegerField(read_only=True)
    figure_tiers = serializers.SerializerMethodField(
        help_text="per resource type of the plan: where the figures it was planned with "
                  "come from (tier, label, measured, band of estimated figures)")

    class Meta:
        model = Job
        fields = [
            "id", "project", "name", "status", "runs", "work", "model_name", "model_size",
            "scheduler", "plan_result_id", "plan", "binding", "runner", "options", "sync_mode",
            "sync_params", "dataparallel", "steps", "batch_size", "micro_batches", "lr", "seed",
            "predicted_throughput", "flushed_throughput",
            "predicted_cost_per_hour", "accrued_cost", "last_throughput", "last_loss",
            "last_step", "summary", "created_at", "figure_tiers", "max_restarts", "restarts",
            "budget",
        ]
        read_only_fields = fields

    def get_figure_tiers(self, job: Job) -> dict[str, dict[str, Any]]:
        return to_json(figures.figure_tiers(job))


class ApproveSerializer(serializers.Serializer):
    """What every job has, and the chosen runner's own fields under `options` (validated by
    its `options_serializer`; errors name them `options.binding.cpu`). Before `options`
    existed the runner's fields sat at the top level: without `options` they are still taken
    from there, and errors keep their names (`binding.cpu`)."""

    plan_result = api_id()
    steps = api_number("steps")
    runner = serializers.ChoiceField(choices=[], default=Runner.PIPELINE)
    batch_size = api_number("batch_size", required=False)
    lr = api_number("lr", default=0.05)
    budget = api_number("budget", required=False, allow_null=True,
                        help_text="$ over all the job's runs (optional): the runner drains the "
                                  "job to a checkpoint and stops it before it passes")
    max_restarts = api_number(
        "max_restarts", required=False,
        help_text="automatic resumes after spot notices, 0..100 (default: 3 for a plan with "
                  "a spot stage, else 0)")
    options = serializers.DictField(
        required=False, help_text="the runner's own fields: pipeline {sync_mode, binding, "
                                  "micro_batches}; dataparallel {sync_mode, sync_params, "
                                  "dataparallel: {workers, slowdowns, backend}}")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["runner"].choices = runners.choices()

    @classmethod
    def schema_rules(cls) -> tuple[dict[str, Any], ...]:
        """`options` per runner, from the registry (each runner's input serializer states its
        own: `json_schema()`); without `runner`, the default runner's."""
        default = cls().fields["runner"].default
        ways = []
        for name in runners.RUNNERS.names():
            way = {"properties": {"runner": {"enum": [name]}, "options": _options_schema(name)}}
            ways.append(way if name == default else {"required": ["runner"], **way})
        return ({"oneOf": ways},)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        runner_input = runners.get(attrs["runner"]).options_serializer
        nested = "options" in attrs
        if nested:
            flat = sorted(set(runner_input().fields) & set(self.initial_data))
            if flat:
                raise serializers.ValidationError(
                    {name: [f"give it under options (options.{name})"] for name in flat})
        # The flat body is the runner's input as it was: its serializer reads its own keys.
        given = runner_input(data=attrs["options"] if nested else self.initial_data)
        if not given.is_valid():
            raise serializers.ValidationError(_dotted(given.errors, OPTIONS if nested else ""))
        return {**attrs, "options": dict(given.validated_data), "nested": nested}

    def run_options(self) -> services.RunOptions:
        data = self.validated_data
        return services.RunOptions(
            steps=data["steps"], runner=data["runner"], options=data["options"],
            batch_size=data.get("batch_size"), lr=data["lr"], nested=data["nested"],
            budget=data.get("budget"))


class MetricRowSerializer(serializers.Serializer):
    """One sample of a run (`services.metrics_series`): the schema of the metrics answer."""

    step = serializers.IntegerField()
    total_steps = serializers.IntegerField()
    elapsed_s = serializers.FloatField()
    samples_per_s = serializers.FloatField()
    loss = serializers.FloatField(allow_null=True)
    cost = serializers.FloatField()
    stages = serializers.ListField(child=serializers.DictField(),
                                   help_text="per stage (pipeline) or worker (data-parallel)")


class RecoverySerializer(serializers.Serializer):
    max_restarts = api_number("max_restarts",
                              help_text="automatic resumes after spot notices over the job's "
                                        "life, 0..100 (0: resume by hand)")


def _options_schema(runner: str) -> dict[str, Any]:
    given = getattr(runners.get(runner).options_serializer, "json_schema", None)
    return given() if callable(given) else {"type": "object"}


def _dotted(errors: Mapping[str, Any], prefix: str) -> dict[str, list[str]]:
    """DRF's nested errors ({"binding": {"cpu": [...]}}) keyed by dotted field names."""
    out: dict[str, list[str]] = {}
    for name, value in errors.items():
        if isinstance(value, Mapping):
            out.update(_dotted(value, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = [str(v) for v in value]
    return out


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = JobSerializer

    def get_queryset(self) -> QuerySet[Job]:
        queryset = visible(self.request.user, Job.objects.select_related("work"))
        return filter_by_query(self.request.query_params, queryset, "project")

    @extend_schema(request=ApproveSerializer, responses={201: JobSerializer})
    def create(self, request: Request) -> Response:
        """Approve a planning result: the job starts at once."""
        approve = ApproveSerializer(data=request.data)
        approve.is_valid(raise_exception=True)
        try:
            model = apps.get_model("planning", "PlanResult")
        except LookupError:
            raise Http404("Planning is not installed.") from None
        result = get_owned(request.user, model.objects.all(),
                           approve.validated_data["plan_result"], Action.EDIT)
        job = services.approve_plan(request.user, result, approve.run_options(),
                                    max_restarts=approve.validated_data.get("max_restarts"))
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        job = services.cancel(request.user, self.get_object())
        return Response(JobSerializer(job).data)

    @extend_schema(request=None, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def restart(self, request: Request, pk: str | None = None) -> Response:
        job = services.restart(request.user, self.get_object())
        return Response(JobSerializer(job).data)

    @extend_schema(request=RecoverySerializer, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def recovery(self, request: Request, pk: str | None = None) -> Response:
        """Set how many automatic restarts after spot notices the job may use (members and
        owners; `restarts` says how many it has used)."""
        body = RecoverySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        job = recovery.set_max_restarts(request.user, self.get_object(),
                                        body.validated_data["max_restarts"])
        return Response(JobSerializer(job).data)

    @extend_schema(request=BudgetSerializer, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def budget(self, request: Request, pk: str | None = None) -> Response:
        """Set (or clear, null) the job's budget: $ over all its runs (members, owners)."""
        body = BudgetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        job = budgets.set_job_budget(request.user, self.get_object(),
                                     body.validated_data["budget"])
        return Response(JobSerializer(job).data)

    @extend_schema(request=None, responses={200: serializers.JSONField()})
    @action(detail=True, methods=["get"])
    def replan(self, request: Request, pk: str | None = None) -> Response:
        """The latest run's "re-plan with measured numbers": offered or why not, and the
        what-if ($/h and samples/s) against the plan that ran."""
        current = replan.offer(self.get_object())
        return Response({"available": current.available, "reason": current.reason,
                         "what_if": current.what_if})

    @extend_schema(request=None, responses={201: serializers.JSONField()})
    @replan.mapping.post
    def replan_create(self, request: Request, pk: str | None = None) -> Response:
        """A new planning request with the latest run's measured numbers (members, owners)."""
        job = self.get_object()
        with by_state():  # offered or not by the job's runs and plan: a refusal is a 409
            planning = replan.replan(request.user, job)
        return Response(
            {"planning_request": planning.pk,
             "url": reverse("planning-request-detail", args=[planning.pk], request=request)},
            status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: MetricRowSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=None)  # the whole run, one list
    def metrics(self, request: Request, pk: str | None = None) -> Response:
        """The latest run's samples (or `?run=N`)."""
        job = self.get_object()
        run = query_int(request.query_params, "run", high=int(limit("run").high))
        return Response(services.metrics_series(job, run))
