"""A resource type of the spec (§1): `count` identical units with a price, memory, network."""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models

from heterps_core.instance import Resource
from webapp.catalogue.hardware import precision_of
from webapp.catalogue.validation import ALL_FIELDS, clean
from webapp.projects.models import ProjectOwned


class ResourceType(ProjectOwned):
    name = models.CharField(max_length=60)
    kind = models.CharField(max_length=30, help_text="cpu, gpu, ...")
    price_per_hour = models.FloatField(
        validators=[MinValueValidator(0.0)], help_text="dollars per unit-hour"
    )
    count = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    memory_gb = models.FloatField(validators=[MinValueValidator(0.001)], help_text="GB per unit")
    network_gbps = models.FloatField(
        validators=[MinValueValidator(0.001)], help_text="Gbit/s per unit"
    )
    # Issue 21: blank follows the hardware entry behind the type (tf32 on A10G/A100/H100,
    # fp32 on V100/T4), so types stored before the field train as people train on them.
    precision = models.CharField(
        max_length=8, blank=True, default="",
        choices=[("fp32", "fp32"), ("tf32", "tf32"), ("amp", "amp")],
        help_text="GPU types: precision of matrix products (blank: the hardware entry's own)",
    )

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="resource_name_per_project")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, ${self.price_per_hour}/h per unit)"

    def clean(self) -> None:
        """The catalogue service's validation, so the admin accepts what pages and API do."""
        clean({f: getattr(self, f) for f in ALL_FIELDS})

    @property
    def precision_label(self) -> str:
        """What a GPU type's estimates train at ('' for CPUs), after the hardware's own
        fallback (no TF32 tensor cores: fp32)."""
        return precision_of(self)

    def to_core(self) -> Resource:
        return Resource(
            name=self.name,
            kind=self.kind,
            price_per_hour=self.price_per_hour,
            count=self.count,
            memory_gb=self.memory_gb,
            network_gbps=self.network_gbps,
        )
