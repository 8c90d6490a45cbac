"""The approve form: how to run a plan (sync mode, binding per resource type, steps)."""

from __future__ import annotations

from typing import Any

from django import forms

from webapp.jobs import runconfig
from webapp.jobs.services import RunOptions

BINDING_HELP = "cpu, cpu:THREADS, cuda:N, remote or remote:cuda"


class ApproveForm(forms.Form):
    steps = forms.IntegerField(min_value=1, initial=40,
                               help_text="mini-batches to train; whole rounds of every stage")
    sync_mode = forms.ChoiceField(help_text="how replicas and the parameter server agree")
    batch_size = forms.IntegerField(min_value=1, required=False,
                                    help_text="samples per mini-batch (default: the plan's)")
    micro_batches = forms.IntegerField(min_value=1, required=False,
                                       help_text="pipeline micro-batches (default 4, 1 stage: 1)")
    lr = forms.FloatField(min_value=0.0, initial=0.05, label="Learning rate")

    def __init__(self, *args: Any, resources: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["sync_mode"].choices = runconfig.sync_mode_choices()
        self.fields["sync_mode"].initial = "bsp"
        self.resources = resources
        for name in resources:
            self.fields[f"bind_{name}"] = forms.CharField(
                label=f"Run {name} on", initial="cpu", max_length=40, help_text=BINDING_HELP
            )

    def options(self) -> RunOptions:
        data = self.cleaned_data
        return RunOptions(
            steps=data["steps"],
            sync_mode=data["sync_mode"],
            binding={name: data[f"bind_{name}"].strip() for name in self.resources},
            micro_batches=data.get("micro_batches"),
            batch_size=data.get("batch_size"),
            lr=data["lr"],
        )

    def add_service_errors(self, problems: dict[str, list[str]]) -> None:
        """Put a service's ValidationError on the matching field (binding.X -> bind_X)."""
        for field, messages in problems.items():
            name = field.replace("binding.", "bind_", 1)
            target = name if name in self.fields else None
            for message in messages:
                self.add_error(target, message if target else f"{field}: {message}")
