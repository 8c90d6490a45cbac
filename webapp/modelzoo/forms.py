from __future__ import annotations

from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError

from heterps_core.zoo.sizes import PUBLISHED_SIZES, SIZES
from webapp.bounds import MAX_TEXT, form_number


def size_choices() -> list[tuple[str, Any]]:
    """Every model's sizes, then each published configuration under the model that has it
    (the service refuses a size the chosen model does not have, under this field)."""
    published = [(f"{model} only", [(size, f"{size} (published configuration)")
                                    for size in sizes])
                 for model, sizes in PUBLISHED_SIZES.items()]
    return [("Every model", [(s, s) for s in SIZES]), *published]


class AddZooModelForm(forms.Form):
    zoo_name = forms.CharField(label="Zoo model")
    size = forms.ChoiceField(choices=size_choices, initial="tiny",
                             help_text="tiny profiles in seconds; production is planned at "
                                       "full scale (tables are capped for timing); a published "
                                       "configuration is the model as its publisher trained it")
    name = forms.CharField(required=False, max_length=80,
                           help_text="optional; default: <zoo model>-<size>")


class FactoryModelForm(forms.Form):
    """Bring your own model: one of the operator's allow-listed factories (no code upload)."""

    factory = forms.ChoiceField(label="Factory", help_text=(
        "an installed package.module:factory returning a torch.nn.Module; the operator's "
        "allow-list (HETERPS_MODEL_FACTORIES) says which"))
    name = forms.CharField(required=False, max_length=80,
                           help_text="optional; default: the factory's name")
    example_input = forms.CharField(
        required=False, max_length=500, label="Example input",
        help_text="optional when the factory declares one; e.g. "
                  "dense=float32[256,13];ids=int64[256,8]<5000 (the first dimension is the "
                  "batch)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from webapp.modelzoo.loading import allowed_factories

        # The factory's own name first: a long module path would be cut off in the select.
        cast(forms.ChoiceField, self.fields["factory"]).choices = [
            (f, f"{f.rpartition(':')[2]} ({f.rpartition(':')[0]})") for f in allowed_factories()]


class ImportModelForm(forms.Form):
    name = forms.CharField(max_length=80)
    layers = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text='JSON list: [{"name": "emb", "kind": "embedding", "parameters": 1000000, '
                  '"shardable": true}, {"name": "fc1", "kind": "dense", "parameters": 4000}]. '
                  'With timings measured elsewhere (plans without profiling): {"batch_size": '
                  '256, "layers": [{"name": "fc1", "kind": "dense", "compute_s": {"t4": '
                  '0.0012}, "output_mb": 0.5, "sync_mb": 0.1, "memory_gb": 0.01}, ...]} with '
                  'compute_s keyed by this project\'s resource type names.',
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class EditModelForm(forms.Form):
    name = forms.CharField(max_length=80)
    description = forms.CharField(required=False, max_length=MAX_TEXT, widget=forms.Textarea(
        attrs={"rows": 3}))
    default_batch_size = form_number("batch_size", label="Default batch size",
                                     help_text="the plan form's batch size for this model")


class ProfileForm(forms.Form):
    batch_size = forms.IntegerField(min_value=1, max_value=65_536,
                                    help_text="samples per mini-batch")
    repeats = forms.IntegerField(min_value=1, max_value=50, initial=3,
                                 help_text="timed repetitions per layer, at least (more until each "
                                           "median is known within 3%)")


def add_service_errors(form: forms.Form, exc: ValidationError) -> None:
    """A service's ValidationError({field: problem}) on the form: under the field it names
    when the form has one, else at the top with the field's name in front."""
    for field, problems in exc.message_dict.items():
        if field in form.fields:
            form.add_error(field, "; ".join(problems))
        else:
            form.add_error(None, f"{field}: {'; '.join(problems)}")
