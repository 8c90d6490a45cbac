"""The resource-type form: start from a hardware-catalogue entry or from scratch. Bounds and
the rules live in `webapp.catalogue.services.clean`; the form only reads the fields."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from heterps_core.hardware.catalogue import KINDS
from webapp.catalogue import services


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

    def __init__(self, *args: Any, with_template: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if with_template:
            template = cast(forms.ChoiceField, self.fields["template"])
            template.choices = [("", "— from scratch —")] + [
                (k["name"], f"{k['name']} ({k['kind']}, ${k['price_per_hour']:g}/h)")
                for k in services.hardware_catalogue()]
        else:
            del self.fields["template"]
        for field in self.fields.values():
            field.widget.attrs.setdefault("autocomplete", "off")
