"""The approve form: how to run a plan. It keeps what every job has (the runner, steps, batch
size, learning rate) and holds each runner's own form (`JobRunner.options_form`), rendered
in its fieldset under the field names it declares; the chosen runner's form makes `options`."""

from __future__ import annotations

from typing import Any

from django import forms
from django.forms.utils import ErrorDict

from webapp.bounds import form_number
from webapp.jobs import runners, spot
from webapp.jobs.inputs.base import OptionsForm
from webapp.jobs.inputs.pipeline import plan_sync_mode
from webapp.jobs.models import Runner
from webapp.jobs.options import RunOptions

OPTIONS = "options."


class ApproveForm(forms.Form):
    runner = forms.ChoiceField(
        choices=runners.choices, initial=Runner.PIPELINE, widget=forms.RadioSelect, required=False,
        label="Run as", help_text="the plan's pipeline, or its model trained data-parallel")
    steps = form_number("steps", initial=40,
                        help_text="pipeline: mini-batches, whole rounds of every stage; "
                                  "data-parallel: local steps of all workers together")
    batch_size = form_number("batch_size", required=False,
                             help_text="samples per mini-batch (default: the plan's); "
                                       "data-parallel: per worker")
    lr = form_number("lr", initial=0.05, label="Learning rate")
    budget = form_number(
        "budget", required=False, label="Budget ($, all runs)",
        help_text="optional: the run is drained to a checkpoint and stopped before the job's "
                  "accrued cost passes it (notices at 80% and 100%)")
    max_restarts = form_number(
        "max_restarts", required=False, label="Automatic restarts after spot notices",
        help_text=f"a run a spot notice stops resumes by itself from its checkpoint, at most "
                  f"this many times (default: {spot.SPOT_DEFAULT} for a plan with a spot "
                  "stage, 0 otherwise; 0: resume by hand)")

    def __init__(self, data: Any = None, *, resources: list[str],
                 plan: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.runner_forms: dict[str, OptionsForm] = {
            runner.name: runner.options_form(data, resources=resources)
            for runner in runners.RUNNERS}
        if plan is not None and Runner.PIPELINE in self.runner_forms:
            # The plan's own sync mode, not bsp: bsp misses a multi-stage plan's estimate.
            self.runner_forms[Runner.PIPELINE].initial["sync_mode"] = plan_sync_mode(plan)
        self.fields["max_restarts"].initial = spot.default_max_restarts(plan or {})

    def chosen(self) -> OptionsForm:
        """The chosen runner's form (the default runner's before the form is cleaned)."""
        name = getattr(self, "cleaned_data", {}).get("runner") or Runner.PIPELINE
        return self.runner_forms.get(name) or self.runner_forms[Runner.PIPELINE]

    @property
    def errors(self) -> ErrorDict:
        """This form's errors and the chosen runner's, by field name."""
        own = super().errors
        if not self.is_bound:
            return own
        return ErrorDict({**own, **self.chosen().errors})

    def options(self) -> RunOptions:
        data = self.cleaned_data
        return RunOptions(steps=data["steps"], runner=data.get("runner") or Runner.PIPELINE,
                          options=self.chosen().options(), batch_size=data.get("batch_size"),
                          lr=data["lr"], budget=data.get("budget"))

    def restarts_asked(self) -> int | None:
        """The automatic restarts asked for (None: the plan's default)."""
        value = self.cleaned_data.get("max_restarts")
        return None if value is None else int(value)

    def add_service_errors(self, problems: dict[str, list[str]]) -> None:
        """Put a service's ValidationError on the matching field: this form's own, or the
        chosen runner's (`options.binding.cpu` -> `bind_cpu`); else on the whole form."""
        runner_form = self.chosen()
        for field, messages in problems.items():
            name = field.removeprefix(OPTIONS)
            target = runner_form.field_of(name) if name != field else None
            for message in messages:
                if target is not None:
                    runner_form.add_error(target, message)
                elif field in self.fields:
                    self.add_error(field, message)
                else:
                    self.add_error(None, f"{name}: {message}")
