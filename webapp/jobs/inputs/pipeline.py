"""The pipeline runner's input: the runtime's sync mode, micro-batches and a binding per
resource type of the plan (`{"sync_mode", "binding", "micro_batches"}`)."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from rest_framework import serializers

from heterps_core.limits import limit
from heterps_core.runtime import sync
from webapp.bounds import api_number, form_number
from webapp.jobs.inputs.base import OptionsForm

TARGETS_HELP = "cpu, cpu:THREADS, cuda:N, remote or remote:cuda"
DEFAULT_SYNC = "bsp"


def plan_sync_mode(plan: dict[str, Any]) -> str:
    """The sync mode the plan's estimate assumes: its own (cost model v2 names one), else
    the overlapped pipeline (`async`) every v1 estimate is computed for. The approve form
    starts there, so a run can meet its estimate unless the person asks for exact SGD."""
    named = plan.get("sync")
    if named in sync.names():
        return str(named)
    return "async" if "async" in sync.names() else DEFAULT_SYNC


def sync_mode_choices() -> list[tuple[str, str]]:
    """The runtime's registered sync modes, with their one-line summaries."""
    return [(name, f"{name}: {sync.get(name).summary}") for name in sync.names()]


class PipelineOptionsForm(OptionsForm):
    legend = "Pipeline run"

    sync_mode = forms.ChoiceField(choices=sync_mode_choices, initial=DEFAULT_SYNC,
                                  required=False, label="Pipeline sync mode",
                                  help_text="how replicas and the parameter server agree")
    micro_batches = form_number("micro_batches", required=False,
                                help_text="pipeline micro-batches (default 4, 1 stage: 1)")

    def __init__(self, *args: Any, resources: list[str], **kwargs: Any) -> None:
        super().__init__(*args, resources=resources, **kwargs)
        for name in resources:
            # Not required by the form: the runner refuses a blank one with its reason.
            self.fields[f"bind_{name}"] = forms.CharField(
                label=f"Run {name} on", initial="cpu", max_length=40, help_text=TARGETS_HELP,
                required=False)

    def options(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"sync_mode": data.get("sync_mode") or DEFAULT_SYNC,
                "binding": {name: data[f"bind_{name}"].strip() for name in self.resources},
                "micro_batches": data.get("micro_batches")}

    def field_of(self, error: str) -> str | None:
        head, _, rest = error.partition(".")
        return super().field_of(f"bind_{rest}" if head == "binding" else error)


# heterps_core.runtime.binding's targets, within limits' threads (1..1024) and gpu_index
# (0..1023). Which types the plan has, and whether this server can reach the target (a GPU,
# a worker agent), the stored plan and the server decide: the runner's 409s.
TARGET_PATTERN = (r"^(cpu(:([1-9][0-9]{0,2}|10[01][0-9]|102[0-4]))?"
                  r"|cuda(:([0-9]|[1-9][0-9]{1,2}|10[01][0-9]|102[0-3]))?|remote(:(cpu|cuda))?)$")


def _target(value: str) -> None:
    if not re.match(TARGET_PATTERN, value):
        raise serializers.ValidationError(f"unknown target {value!r}; use {TARGETS_HELP}")


class PipelineOptionsSerializer(serializers.Serializer):
    # A mode of the runtime's registry.
    sync_mode = serializers.ChoiceField(choices=[], default=DEFAULT_SYNC)
    binding = serializers.DictField(
        child=serializers.CharField(max_length=40, validators=[_target]),
        required=False, help_text=f"resource type -> {TARGETS_HELP}; a type left out runs "
                                  "on one local CPU thread")
    micro_batches = api_number("micro_batches", required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["sync_mode"].choices = sync.names()

    @staticmethod
    def json_schema() -> dict[str, Any]:
        """`options` of a pipeline run in the API's schema (the runtime's sync modes)."""
        low, high = limit("micro_batches").low, limit("micro_batches").high
        return {"type": "object", "properties": {
            "sync_mode": {"type": "string", "enum": list(sync.names())},
            "binding": {"type": "object", "additionalProperties": {
                "type": "string", "pattern": TARGET_PATTERN}},
            "micro_batches": {"type": "integer", "minimum": int(low), "maximum": int(high)}}}
