"""REST API for RL training runs: list, read (with the curve), start one."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.bounds import api_id, api_number, filter_by_query
from webapp.planning.models import PlanningRequest
from webapp.projects.permissions import Action, get_owned, visible
from webapp.rltraining import services
from webapp.rltraining.models import RLTrainingRun


class RLTrainingRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = RLTrainingRun
        fields = ["id", "project", "request", "work", "budget_s", "max_updates", "samples",
                  "seed", "curve", "best_plan", "created_at"]
        read_only_fields = fields


class StartTrainingSerializer(serializers.Serializer):
    request = api_id(help_text="planning request whose instance to train on")
    budget_s = api_number("budget_s", required=False, allow_null=True, default=None,
                          help_text="optional cap in CPU seconds of training (never wall "
                                    "time); empty: none, the run is max_updates updates")
    max_updates = api_number("max_updates", required=False, default=300,
                             help_text="policy updates: the run's work budget")
    samples = api_number("rl_samples", required=False, default=64)


class RLTrainingRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                           viewsets.GenericViewSet):
    serializer_class = RLTrainingRunSerializer

    def get_queryset(self) -> QuerySet[RLTrainingRun]:
        queryset = visible(self.request.user, RLTrainingRun.objects.all())
        return filter_by_query(self.request.query_params, queryset, "project")

    @extend_schema(request=StartTrainingSerializer, responses={201: RLTrainingRunSerializer})
    def create(self, request: Request) -> Response:
        start = StartTrainingSerializer(data=request.data)
        start.is_valid(raise_exception=True)
        data = start.validated_data
        planning = get_owned(request.user, PlanningRequest.objects.all(), data["request"],
                             Action.EDIT)
        run = services.start_training(request.user, planning, data["budget_s"],
                                      data["max_updates"], data["samples"])
        return Response(RLTrainingRunSerializer(run).data, status=status.HTTP_201_CREATED)
