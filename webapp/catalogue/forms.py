"""The resource-type form: start from a hardware-catalogue entry or from scratch. Bounds and
the rules live in `webapp.catalogue.validation`; the form checks each field with them, so it
names every problem at once."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError

from heterps_core import limits
from heterps_core.errors import InstanceError
from heterps_core.hardware.catalogue import KINDS
from webapp.catalogue import services, validation
from webapp.catalogue.spot_defaults import HELP as SPOT_HELP


class ResourceTypeForm(forms.Form):
    template = forms.ChoiceField(
        required=False, label="Start from",
        help_text="a catalogue entry fills the fields below with its list price and specs; "
                  "adjust price and count to yours")
    name = forms.CharField(required=False, max_length=services.NAME_MAX)
    kind = forms.ChoiceField(choices=[(k, k) for k in KINDS], required=False)
    price_per_hour = forms.CharField(required=False, label="Price ($ per unit-hour)")
    count = forms.CharField(required=False, label="Units available")
    memory_gb = forms.CharField(required=False, label="Memory (GB per unit)")
    network_gbps = forms.CharField(required=False, label="Network (Gbit/s per unit)")
    precision = forms.ChoiceField(
        required=False, label="Precision (GPU types)",
        choices=[("", "the hardware's own (tf32 on A10G/A100/H100, fp32 on V100/T4)"),
                 ("fp32", "fp32"), ("tf32", "tf32 (TF32 tensor cores)"),
                 ("amp", "amp (fp16/bf16 mixed precision)")],
        help_text="what the GPU's matrix products run at in the estimates; a GPU without "
                  "TF32 tensor cores runs tf32 as fp32")
    spot_price = forms.CharField(required=False, label="Spot price ($ per unit-hour)",
                                 help_text=SPOT_HELP["spot_price"])
    interruptions_per_hour = forms.CharField(required=False,
                                             label="Spot interruptions (per unit-hour)",
                                             help_text=SPOT_HELP["interruptions_per_hour"])
    restart_s = forms.CharField(required=False, label="Spot restart (seconds)",
                                help_text=SPOT_HELP["restart_s"])

    def __init__(self, *args: Any, with_template: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.creates = with_template  # a new type; editing, a blank field keeps its value
        if with_template:
            template = cast(forms.ChoiceField, self.fields["template"])
            template.choices = [("", "— from scratch —")] + [
                (k["name"], f"{k['name']} ({k['kind']}, ${k['price_per_hour']:g}/h)")
                for k in services.hardware_catalogue()]
        else:
            del self.fields["template"]
        for field in self.fields.values():
            field.widget.attrs.setdefault("autocomplete", "off")

    def clean(self) -> dict[str, Any]:
        """Every field's problem at once (issue 25.11: the form said one at a time), each
        checked on its own with the rules `validation.clean` applies; what only the whole
        entry can tell (the core's catalogue validator) the service adds after."""
        data = super().clean() or {}
        filled = data
        if self.creates and data.get("template"):
            try:  # the catalogue entry fills the fields left empty, as the service does
                filled = services._with_template(data)
            except ValidationError as exc:
                self.add_error(None, exc)
                return data
        for field, problem in field_problems(filled, required=self.creates).items():
            self.add_error(field, problem)
        return data


def field_problems(data: dict[str, Any], required: bool = True) -> dict[str, str]:
    """Field -> its problem, for every field of a resource type that has one (`required`
    False: a blank field is left alone, as an edit keeps the stored value)."""
    problems: dict[str, str] = {}
    blank = {f for f in validation.FIELDS if data.get(f) in (None, "")}
    for field in blank if required else ():
        problems[field] = "this field is required"
    name = str(data.get("name") or "").strip()
    if "name" not in blank and (len(name) > validation.NAME_MAX
                                   or not validation._NAME.match(name)):
        problems["name"] = validation.NAME_RULE
    kind = str(data.get("kind") or "").strip().lower()
    if "kind" not in blank and kind not in KINDS:
        problems["kind"] = f"must be one of {', '.join(KINDS)}, got {kind!r}"
    for field in validation.NUMBERS:
        if field in blank:
            continue
        try:
            limits.check(field, validation._number(data[field], field))
        except ValidationError as exc:
            problems[field] = " ".join(exc.message_dict[field])
        except InstanceError as exc:
            problems[field] = exc.problem
    if kind in KINDS:
        try:
            validation._precision(data.get("precision"), kind)
        except ValidationError as exc:
            problems["precision"] = " ".join(exc.message_dict["precision"])
    try:
        validation.market(data)
    except ValidationError as exc:
        problems.update({f: " ".join(m) for f, m in exc.message_dict.items()})
    return problems
