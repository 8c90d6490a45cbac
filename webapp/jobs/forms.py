"""The approve form: how to run a plan. Either a pipeline run (the runtime's sync mode,
binding per resource type) or a data-parallel run of the plan's model (a sync mode of
heterps_core.dataparallel with its parameters, workers, slowdowns, backend)."""

from __future__ import annotations

from typing import Any

from django import forms

from webapp.bounds import form_number
from webapp.jobs import runners
from webapp.jobs.models import Runner
from webapp.jobs.options import RunOptions
from webapp.jobs.runners import dataparallel, pipeline

BINDING_HELP = "cpu, cpu:THREADS, cuda:N, remote or remote:cuda"
SLOWDOWN_HELP = ("emulation: worker i's measured step time is multiplied by factor i "
                 "(e.g. 1,1,4); blank = all at full speed")


def param_field_name(mode: str, param: str) -> str:
    return f"dp_{mode}__{param}"


class ApproveForm(forms.Form):
    runner = forms.ChoiceField(
        choices=runners.choices, initial=Runner.PIPELINE, widget=forms.RadioSelect, required=False,
        label="Run as", help_text="the plan's pipeline, or its model trained data-parallel")
    steps = form_number("steps", initial=40,
                        help_text="pipeline: mini-batches, whole rounds of every stage; "
                                  "data-parallel: local steps of all workers together")
    sync_mode = forms.ChoiceField(choices=pipeline.sync_mode_choices, initial="bsp",
                                  required=False, label="Pipeline sync mode",
                                  help_text="how replicas and the parameter server agree")
    batch_size = form_number("batch_size", required=False,
                             help_text="samples per mini-batch (default: the plan's); "
                                       "data-parallel: per worker")
    micro_batches = form_number("micro_batches", required=False,
                                help_text="pipeline micro-batches (default 4, 1 stage: 1)")
    lr = form_number("lr", initial=0.05, label="Learning rate")
    dp_mode = forms.ChoiceField(choices=dataparallel.mode_choices, initial="ashl",
                                required=False, label="Data-parallel sync mode",
                                help_text="how the workers synchronise (parameters below)")
    dp_workers = forms.IntegerField(min_value=1, max_value=dataparallel.MAX_WORKERS,
                                    initial=dataparallel.DEFAULT_WORKERS, required=False,
                                    label="Workers")
    dp_slowdowns = forms.CharField(required=False, max_length=400, initial="1,1,4",
                                   label="Per-worker slowdowns (emulated)",
                                   help_text=SLOWDOWN_HELP)
    dp_backend = forms.ChoiceField(choices=dataparallel.backend_choices, required=False,
                                   initial="emulated", label="Backend",
                                   help_text="emulated time is repeatable; processes measure "
                                             "real concurrency on this machine")

    PIPELINE_FIELDS = ("sync_mode", "micro_batches")
    COMMON_FIELDS = ("runner", "steps", "batch_size", "lr")
    DP_FIELDS = ("dp_mode", "dp_workers", "dp_slowdowns", "dp_backend")

    def __init__(self, *args: Any, resources: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resources = resources
        for name in resources:
            # Not required here: a data-parallel run has no binding. A pipeline run's runner
            # refuses a blank one (every resource of the plan must run somewhere).
            self.fields[f"bind_{name}"] = forms.CharField(
                label=f"Run {name} on", initial="cpu", max_length=40, help_text=BINDING_HELP,
                required=False,
            )
        # The modes' parameters are checked by the core (services), not here: the field
        # names its problem exactly as the core words it.
        self.mode_params: dict[str, list[str]] = {}
        for schema in dataparallel.schemas():
            names = []
            for param, spec in schema["params"]["properties"].items():
                name = param_field_name(schema["name"], param)
                self.fields[name] = _param_field(param, spec, schema["labels"].get(param, param))
                names.append(name)
            self.mode_params[schema["name"]] = names

    def groups(self) -> dict[str, Any]:
        """Bound fields by section, for the template."""
        bind = [f"bind_{name}" for name in self.resources]
        summaries = dict(dataparallel.mode_choices())
        return {
            "common": [self[n] for n in self.COMMON_FIELDS],
            "pipeline": [self[n] for n in (*self.PIPELINE_FIELDS, *bind)],
            "dataparallel": [self[n] for n in self.DP_FIELDS],
            "modes": [(mode, summaries[mode], [self[n] for n in names])
                      for mode, names in self.mode_params.items()],
        }

    def options(self) -> RunOptions:
        data = self.cleaned_data
        if data.get("runner") == Runner.DATAPARALLEL:
            mode = data.get("dp_mode") or "bsp"
            return RunOptions(
                steps=data["steps"], runner=Runner.DATAPARALLEL, sync_mode=mode,
                sync_params=self._mode_params(mode), batch_size=data.get("batch_size"),
                lr=data["lr"],
                dataparallel={"workers": data.get("dp_workers") or dataparallel.DEFAULT_WORKERS,
                              "slowdowns": data.get("dp_slowdowns") or "",
                              "backend": data.get("dp_backend") or "emulated"},
            )
        return RunOptions(
            steps=data["steps"],
            sync_mode=data.get("sync_mode") or "bsp",
            binding={name: data[f"bind_{name}"].strip() for name in self.resources},
            micro_batches=data.get("micro_batches"),
            batch_size=data.get("batch_size"),
            lr=data["lr"],
        )

    def _mode_params(self, mode: str) -> dict[str, Any]:
        # Strings as posted (blank = the mode's default); the core coerces and validates.
        values: dict[str, Any] = {}
        for name in self.mode_params.get(mode, []):
            value = self.cleaned_data.get(name)
            if isinstance(value, bool) or (value is not None and str(value).strip()):
                values[name.partition("__")[2]] = value
        return values

    def add_service_errors(self, problems: dict[str, list[str]]) -> None:
        """Put a service's ValidationError on the matching field: binding.X -> bind_X,
        mode.M.P -> that mode's parameter, dataparallel.slowdowns[1] -> dp_slowdowns."""
        for field, messages in problems.items():
            name = _form_field(field)
            target = name if name in self.fields else None
            for message in messages:
                self.add_error(target, message if target else f"{field}: {message}")


def _form_field(field: str) -> str:
    head, _, rest = field.partition(".")
    if head == "binding":
        return f"bind_{rest}"
    if head == "mode":
        mode, _, param = rest.partition(".")
        return param_field_name(mode, param) if param else "dp_mode"
    if head == "dataparallel":
        return "dp_" + rest.partition("[")[0]
    return field


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
