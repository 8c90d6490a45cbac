"""The data-parallel runner's input: a sync mode of `heterps_core.dataparallel` and its
parameters, and the workers' settings (`{"sync_mode", "sync_params", "dataparallel":
{"workers", "slowdowns", "backend"}}`). The core validates the values and words the
problems; the form generates one input per parameter from each mode's schema."""

from __future__ import annotations

from typing import Any

from django import forms
from rest_framework import serializers

from heterps_core.dataparallel import modes
from heterps_core.dataparallel.config import BACKENDS
from webapp.jobs.inputs.base import OptionsForm, Subset

DEFAULT_SYNC = "bsp"
DEFAULT_WORKERS = 3
MAX_WORKERS = 64
SLOWDOWN_HELP = ("emulation: worker i's measured step time is multiplied by factor i "
                 "(e.g. 1,1,4); blank = all at full speed")


def schemas() -> list[dict[str, Any]]:
    """Every registered sync mode: name, summary and the JSON schema of its parameters."""
    return modes.schemas()


def mode_choices() -> list[tuple[str, str]]:
    return [(s["name"], f"{s['name']}: {s['summary']}") for s in schemas()]


def backend_choices() -> list[tuple[str, str]]:
    labels = {"emulated": "emulated: one process, emulated time (repeatable)",
              "process": "process: one OS process per worker, wall-clock time"}
    return [(name, labels.get(name, name)) for name in BACKENDS]


def param_field_name(mode: str, param: str) -> str:
    return f"dp_{mode}__{param}"


class DataParallelOptionsForm(OptionsForm):
    legend = "Data-parallel run"

    dp_mode = forms.ChoiceField(choices=mode_choices, initial="ashl", required=False,
                                label="Data-parallel sync mode",
                                help_text="how the workers synchronise (parameters below)")
    dp_workers = forms.IntegerField(min_value=1, max_value=MAX_WORKERS, initial=DEFAULT_WORKERS,
                                    required=False, label="Workers")
    dp_slowdowns = forms.CharField(required=False, max_length=400, initial="1,1,4",
                                   label="Per-worker slowdowns (emulated)",
                                   help_text=SLOWDOWN_HELP)
    dp_backend = forms.ChoiceField(choices=backend_choices, required=False, initial="emulated",
                                   label="Backend",
                                   help_text="emulated time is repeatable; processes measure "
                                             "real concurrency on this machine")

    def __init__(self, *args: Any, resources: list[str], **kwargs: Any) -> None:
        super().__init__(*args, resources=resources, **kwargs)
        # The modes' parameters are checked by the core, not here: the field names its
        # problem exactly as the core words it.
        self.mode_params: dict[str, list[str]] = {}
        for schema in schemas():
            names = []
            for param, spec in schema["params"]["properties"].items():
                name = param_field_name(schema["name"], param)
                self.fields[name] = _param_field(param, spec, schema["labels"].get(param, param))
                names.append(name)
            self.mode_params[schema["name"]] = names

    def subsets(self) -> list[Subset]:
        summaries = dict(mode_choices())
        return [Subset(mode, summaries[mode], [self[n] for n in names])
                for mode, names in self.mode_params.items()]

    def options(self) -> dict[str, Any]:
        data = self.cleaned_data
        mode = data.get("dp_mode") or DEFAULT_SYNC
        return {"sync_mode": mode, "sync_params": self._mode_params(mode),
                "dataparallel": {"workers": data.get("dp_workers") or DEFAULT_WORKERS,
                                 "slowdowns": data.get("dp_slowdowns") or "",
                                 "backend": data.get("dp_backend") or "emulated"}}

    def _mode_params(self, mode: str) -> dict[str, Any]:
        # Strings as posted (blank = the mode's default); the core coerces and validates.
        values: dict[str, Any] = {}
        for name in self.mode_params.get(mode, []):
            value = self.cleaned_data.get(name)
            if isinstance(value, bool) or (value is not None and str(value).strip()):
                values[name.partition("__")[2]] = value
        return values

    def field_of(self, error: str) -> str | None:
        """mode.M.P -> that mode's parameter, mode -> dp_mode, dataparallel.slowdowns[1] ->
        dp_slowdowns."""
        head, _, rest = error.partition(".")
        if head == "mode":
            mode, _, param = rest.partition(".")
            return super().field_of(param_field_name(mode, param) if param else "dp_mode")
        if head in ("dataparallel", "sync_mode"):
            return super().field_of("dp_" + (rest or "mode"))
        return super().field_of(error)


class DataParallelOptionsSerializer(serializers.Serializer):
    # A mode of the data-parallel registry; the core validates its parameters (errors name
    # mode.<mode>.<param>) and the settings (dataparallel.<setting>).
    sync_mode = serializers.ChoiceField(choices=[], default=DEFAULT_SYNC)
    sync_params = serializers.DictField(required=False)
    dataparallel = serializers.DictField(
        required=False, help_text="workers, slowdowns (a list of factors or text like 1,1,4), "
                                  "backend (emulated or process)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["sync_mode"].choices = [s["name"] for s in schemas()]

    def validate_dataparallel(self, value: dict[str, Any]) -> dict[str, Any]:
        workers = value.get("workers")
        if type(workers) is int and workers > MAX_WORKERS:  # the form's bound (the core's is
            # wider): the schema's one-factor-per-worker rule is stated up to it
            raise serializers.ValidationError({"workers": f"at most {MAX_WORKERS}"})
        return value

    @staticmethod
    def json_schema() -> dict[str, Any]:
        """`options` of a data-parallel run in the API's schema: each mode's parameters (the
        core's registry states them) and the workers' settings."""
        modes_ = schemas()
        per_mode = [{"required": ["sync_mode"], "properties": {
            "sync_mode": {"enum": [m["name"]]}, "sync_params": m["params"]}} for m in modes_]
        default = next(m for m in modes_ if m["name"] == DEFAULT_SYNC)
        per_mode.append({"not": {"required": ["sync_mode"]},
                         "properties": {"sync_params": default["params"]}})
        # One factor per worker (slowdowns as long as workers) JSON Schema generators cannot
        # take as 64 alternatives: the core refuses a mismatch naming dataparallel.slowdowns.
        factor = {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1000}
        settings = {"type": "object", "properties": {
            "workers": {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS},
            "slowdowns": {"type": "array", "items": factor, "maxItems": MAX_WORKERS},
            "backend": {"type": "string", "enum": list(BACKENDS)}}}
        return {"type": "object", "properties": {
            "sync_mode": {"type": "string", "enum": [m["name"] for m in modes_]},
            "sync_params": {"type": "object"}, "dataparallel": settings},
            "anyOf": per_mode}


def _param_field(param: str, spec: dict[str, Any], label: str) -> forms.Field:
    bounds = [f"{k} {spec[k]:g}" for k in ("minimum", "maximum") if k in spec]
    # Words for people; the parameter's name (what the API and CLI take) in the help text.
    help_text = spec.get("description", "")
    if bounds:
        help_text += f" ({', '.join(bounds)}; default {spec['default']})"
    help_text += f" [{param}]"
    if spec["type"] == "boolean":
        return forms.BooleanField(required=False, initial=spec["default"], label=label,
                                  help_text=f"{help_text} (default {str(spec['default']).lower()})")
    attrs = {"step": "1" if spec["type"] == "integer" else "any"}
    attrs.update({k[:3]: str(spec[k]) for k in ("minimum", "maximum") if k in spec})
    return forms.CharField(required=False, initial=spec["default"], label=label,
                           help_text=help_text, widget=forms.NumberInput(attrs=attrs))
