from __future__ import annotations

from typing import Any, cast

from django import forms

from webapp.bounds import IdChoiceField, IdMultipleChoiceField, form_number
from webapp.catalogue.models import ResourceType
from webapp.modelzoo.models import RegisteredModel
from webapp.planning import services
from webapp.planning.models import Cluster
from webapp.projects.models import Project


class PlanningForm(forms.Form):
    model = IdChoiceField(queryset=RegisteredModel.objects.none())
    cluster = IdChoiceField(queryset=Cluster.objects.none())
    throughput_target = form_number("throughput_target", label="Throughput target (samples/s)")
    batch_size = form_number("batch_size", required=False,
                             help_text="samples per mini-batch; empty: the batch size "
                                       "of the model's latest profile")
    samples = form_number("samples", required=False, label="Samples to train on",
                          help_text="optional; gives hours and total cost")
    max_hourly_cost = form_number("max_hourly_cost", required=False, label="Max $ per hour",
                                  help_text="optional cap: the cheapest plan within it, or what "
                                            "the target needs")
    max_total_cost = form_number("max_total_cost", required=False, label="Max $ in total",
                                 help_text="optional cap on the whole job; needs samples")
    schedulers = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    budget_s = form_number("budget_s", label="Budget per scheduler (CPU-s)", initial=5.0,
                           max_value=services.MAX_BUDGET_S,
                           help_text="CPU seconds of the solve, never wall time: a busy "
                                     "server gives the same plans")

    def __init__(self, project: Project, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        fields = self.fields
        models = RegisteredModel.objects.filter(project=project)
        clusters = Cluster.objects.filter(project=project)
        cast(forms.ModelChoiceField, fields["model"]).queryset = models
        cast(forms.ModelChoiceField, fields["cluster"]).queryset = clusters
        # The only model or cluster is the choice: a blank select made the first user's
        # "Plan" button seem dead (the browser refused the form without saying where).
        for name, rows in (("model", models), ("cluster", clusters)):
            only = list(rows.values_list("pk", flat=True)[:2])
            if len(only) == 1 and not self.initial.get(name):
                self.initial[name] = only[0]
        cast(forms.ChoiceField, fields["schedulers"]).choices = [
            (n, n) for n in services.available_schedulers()]
        self.initial.setdefault("schedulers", services.default_schedulers())
        self.initial.setdefault("budget_s", 5.0)


class ClusterForm(forms.Form):
    name = forms.CharField(max_length=80)
    resource_types = IdMultipleChoiceField(queryset=ResourceType.objects.none(),
                                           widget=forms.CheckboxSelectMultiple)
    description = forms.CharField(required=False, max_length=500)

    def __init__(self, project: Project, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        types = cast(forms.ModelChoiceField, self.fields["resource_types"])
        types.queryset = ResourceType.objects.filter(project=project)


class WhatIfForm(forms.Form):
    resource = forms.ChoiceField()
    price_per_hour = form_number("price_per_hour", required=False,
                                 label="New price ($ per unit-hour)")
    count = form_number("count", required=False, label="New count (units available)")

    def __init__(self, resources: list[str], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["resource"]).choices = [(r, r) for r in resources]


class RLTrainingForm(forms.Form):
    budget_s = form_number("budget_s", label="CPU cap (s)", required=False,
                           help_text="optional; CPU seconds of training, never wall time")
    max_updates = form_number("max_updates", label="Updates", initial=300,
                              help_text="policy updates: the run's work")
    samples = form_number("rl_samples", label="Plans sampled per update", initial=64)
