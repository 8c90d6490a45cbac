from __future__ import annotations

from typing import Any

from django import forms

from webapp.catalogue.models import ResourceType
from webapp.modelzoo.models import RegisteredModel
from webapp.planning import services
from webapp.planning.models import Cluster
from webapp.projects.models import Project


class PlanningForm(forms.Form):
    model = forms.ModelChoiceField(queryset=RegisteredModel.objects.none())
    cluster = forms.ModelChoiceField(queryset=Cluster.objects.none())
    throughput_target = forms.FloatField(label="Throughput target (samples/s)", min_value=1e-9)
    batch_size = forms.IntegerField(required=False, min_value=1,
                                    help_text="samples per mini-batch; empty: the batch size "
                                              "of the model's latest profile")
    samples = forms.FloatField(required=False, min_value=1, label="Samples to train on",
                               help_text="optional; gives hours and total cost")
    schedulers = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    budget_s = forms.FloatField(label="Budget per stochastic scheduler (s)", initial=5.0,
                                min_value=0.1, max_value=services.MAX_BUDGET_S)

    def __init__(self, project: Project, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].queryset = RegisteredModel.objects.filter(project=project)
        self.fields["cluster"].queryset = Cluster.objects.filter(project=project)
        self.fields["schedulers"].choices = [(n, n) for n in services.available_schedulers()]
        self.initial.setdefault("schedulers", services.default_schedulers())
        self.initial.setdefault("budget_s", 5.0)


class ClusterForm(forms.Form):
    name = forms.CharField(max_length=80)
    resource_types = forms.ModelMultipleChoiceField(queryset=ResourceType.objects.none(),
                                                    widget=forms.CheckboxSelectMultiple)
    description = forms.CharField(required=False, max_length=500)

    def __init__(self, project: Project, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["resource_types"].queryset = ResourceType.objects.filter(project=project)


class WhatIfForm(forms.Form):
    resource = forms.ChoiceField()
    price_per_hour = forms.FloatField(required=False, label="New price ($ per unit-hour)")
    count = forms.IntegerField(required=False, label="New count (units available)")

    def __init__(self, resources: list[str], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["resource"].choices = [(r, r) for r in resources]


class RLTrainingForm(forms.Form):
    budget_s = forms.FloatField(label="Budget (s)", initial=10.0, min_value=0.1, max_value=600)
    max_updates = forms.IntegerField(initial=300, min_value=1, max_value=20_000)
    samples = forms.IntegerField(label="Plans sampled per update", initial=64, min_value=2,
                                 max_value=1024)
