"""A model registered in a project: a zoo entry at one size, or an imported layer chain."""

from __future__ import annotations

from typing import Any

from django.db import models

from webapp.projects.models import ProjectOwned


class Source(models.TextChoices):
    ZOO = "zoo", "Zoo"
    IMPORTED = "imported", "Imported"


class RegisteredModel(ProjectOwned):
    """`layers` is the planner-visible chain: [{index, name, kind, parameters, shardable}]."""

    name = models.CharField(max_length=80)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.ZOO)
    zoo_name = models.CharField(max_length=60, blank=True)
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

    @property
    def profilable(self) -> bool:
        # Only zoo entries can be rebuilt inside the server; imported chains carry no code.
        return self.source == Source.ZOO

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
