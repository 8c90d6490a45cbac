"""A model registered in a project: a zoo entry at one size, or an imported layer chain."""

from __future__ import annotations

from typing import Any

from django.db import models

from webapp.modelzoo.loading import check_model_fields
from webapp.modelzoo.sources import Source
from webapp.projects.models import ProjectOwned


class RegisteredModel(ProjectOwned):
    """`layers` is the planner-visible chain: [{index, name, kind, parameters, shardable}];
    an imported chain's layers may also carry timings measured elsewhere (`compute_s` per
    resource type, `output_mb`, `sync_mb`, `memory_gb`), which plan without profiling.
    `factory` names an allow-listed `package.module:factory` (settings.MODEL_FACTORIES)."""

    name = models.CharField(max_length=80)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.ZOO)
    zoo_name = models.CharField(max_length=60, blank=True, help_text="a zoo entry's name")
    factory = models.CharField(max_length=200, blank=True,
                               help_text="package.module:factory, one of MODEL_FACTORIES")
    example_input = models.CharField(max_length=500, blank=True,
                                     help_text="the factory's input, e.g. dense=float32[64,13]")
    size = models.CharField(max_length=20, blank=True, help_text="zoo size: tiny/small/production")
    description = models.TextField(blank=True)
    default_batch_size = models.PositiveIntegerField(default=1000)
    layers = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="model_name_per_project")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """The admin's check: a zoo name must be a zoo entry and a factory allow-listed, so
        no text typed there reaches the code loader (webapp/modelzoo/loading.py)."""
        check_model_fields(self)

    @property
    def profilable(self) -> bool:
        # Zoo entries and allow-listed factories are rebuilt in the server; imported chains
        # carry no code.
        return self.source in (Source.ZOO, Source.FACTORY)

    @property
    def timed(self) -> bool:
        """An imported chain that brought its own per-layer timings (plans without a
        profile)."""
        return self.source == Source.IMPORTED and bool(self.layers) and all(
            isinstance(layer.get("compute_s"), dict) for layer in self.layers)

    @property
    def runtime_model(self) -> str:
        """What the runtime builds (zoo name or factory); empty: this model cannot run."""
        if self.source == Source.ZOO:
            return self.zoo_name
        if self.source == Source.FACTORY:
            return self.factory
        return ""

    @property
    def sparse_layers(self) -> int:
        return sum(1 for layer in self.layers if layer.get("kind") in ("embedding", "sparse"))

    @property
    def parameters(self) -> int:
        return sum(int(layer.get("parameters", 0)) for layer in self.layers)

    def layer_names(self) -> list[str]:
        return [str(layer["name"]) for layer in self.layers]

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "layers": len(self.layers)}
