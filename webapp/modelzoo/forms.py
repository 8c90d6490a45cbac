from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from heterps_core.zoo.sizes import SIZES


class AddZooModelForm(forms.Form):
    zoo_name = forms.CharField(label="Zoo model")
    size = forms.ChoiceField(choices=[(s, s) for s in SIZES], initial="tiny",
                             help_text="tiny profiles in seconds; production is planned at "
                                       "full scale (tables are capped for timing)")
    name = forms.CharField(required=False, max_length=80,
                           help_text="optional; default: <zoo model>-<size>")


class ImportModelForm(forms.Form):
    name = forms.CharField(max_length=80)
    layers = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text='JSON list: [{"name": "emb", "kind": "embedding", "parameters": 1000000, '
                  '"shardable": true}, {"name": "fc1", "kind": "dense", "parameters": 4000}]',
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class ProfileForm(forms.Form):
    batch_size = forms.IntegerField(min_value=1, max_value=65_536,
                                    help_text="samples per mini-batch")
    repeats = forms.IntegerField(min_value=1, max_value=50, initial=3,
                                 help_text="timed repetitions per layer")


def add_service_errors(form: forms.Form, exc: ValidationError) -> None:
    """A service's ValidationError({field: problem}) on the form: under the field it names
    when the form has one, else at the top with the field's name in front."""
    for field, problems in exc.message_dict.items():
        if field in form.fields:
            form.add_error(field, "; ".join(problems))
        else:
            form.add_error(None, f"{field}: {'; '.join(problems)}")
