"""The runner's part of the approve form: its fields, the `options` they make, and which of
its fields a runner's error (`binding.cpu`, `mode.ssp.staleness`) belongs on."""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

from django import forms


class Subset(NamedTuple):
    """Fields shown only while `key` is chosen (a data-parallel mode's parameters)."""

    key: str
    summary: str
    fields: list[forms.BoundField]


class OptionsForm(forms.Form):
    """A runner's own fields, rendered inside the approve form under their own names (no
    prefix: `sync_mode`, `bind_cpu`, `dp_slowdowns`)."""

    legend: ClassVar[str] = ""

    def __init__(self, *args: Any, resources: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resources = resources

    def main_fields(self) -> list[forms.BoundField]:
        """The fields always shown (every field not in a subset)."""
        inside = {f.name for subset in self.subsets() for f in subset.fields}
        return [self[name] for name in self.fields if name not in inside]

    def subsets(self) -> list[Subset]:
        return []

    def options(self) -> dict[str, Any]:
        """The runner's input from the cleaned fields (`RunOptions.options`)."""
        raise NotImplementedError

    def field_of(self, error: str) -> str | None:
        """The field an error of the runner's input belongs on (None: none of this form's)."""
        name = error.partition("[")[0]
        return name if name in self.fields else None
