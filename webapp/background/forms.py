"""The form that starts an `evaluate` work record from a page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django import forms

DEMO_INSTANCE = Path(__file__).resolve().parent.parent / "catalogue" / "demo" / "tiny-ctr.json"


class EvaluateForm(forms.Form):
    instance = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
        help_text="A planning instance in the spec's JSON format.",
    )
    assignments = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One assignment per line, a resource name per layer separated by commas. "
        "Empty: every single-resource plan.",
    )

    @classmethod
    def demo(cls) -> EvaluateForm:
        return cls(initial={"instance": DEMO_INSTANCE.read_text(),
                            "assignments": "cpu,gpu,gpu\ncpu,cpu,gpu"})

    def clean_instance(self) -> Any:
        try:
            return json.loads(self.cleaned_data["instance"])
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from exc

    def clean_assignments(self) -> list[list[str]]:
        lines = self.cleaned_data["assignments"].splitlines()
        return [[part.strip() for part in line.split(",")] for line in lines if line.strip()]

    def params(self) -> dict[str, Any]:
        return {
            "instance": self.cleaned_data["instance"],
            "assignments": self.cleaned_data["assignments"],
        }
