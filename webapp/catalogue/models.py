"""A resource type of the spec (§1): `count` identical units with a price, memory, network."""

from __future__ import annotations

from django.db import models

from heterps_core.instance import Resource, SpotMarket
from webapp.catalogue.hardware import precision_of
from webapp.catalogue.validation import ALL_FIELDS, clean
from webapp.projects.models import ProjectOwned


class ResourceType(ProjectOwned):
    name = models.CharField(max_length=60)
    kind = models.CharField(max_length=30, help_text="cpu, gpu, ...")
    # Ranges: heterps_core.limits, checked by `clean` (validation.clean) for every entry
    # point; a validator here would be a second, different range.
    price_per_hour = models.FloatField(help_text="dollars per unit-hour")
    count = models.PositiveIntegerField()
    memory_gb = models.FloatField(help_text="GB per unit")
    network_gbps = models.FloatField(help_text="Gbit/s per unit")
    # Issue 21: blank follows the hardware entry behind the type (tf32 on A10G/A100/H100,
    # fp32 on V100/T4), so types stored before the field train as people train on them.
    precision = models.CharField(
        max_length=8, blank=True, default="",
        choices=[("fp32", "fp32"), ("tf32", "tf32"), ("amp", "amp")],
        help_text="GPU types: precision of matrix products (blank: the hardware entry's own)",
    )
    # Issue 26: an optional spot offer; spot_price null = on-demand only. Defaults offered
    # on the form come from public interruption bands (catalogue.spot_defaults).
    spot_price = models.FloatField(null=True, blank=True,
                                   help_text="$ per spot unit-hour; empty: no spot offer")
    interruptions_per_hour = models.FloatField(
        null=True, blank=True, help_text="spot interruptions per unit-hour")
    restart_s = models.FloatField(
        null=True, blank=True, help_text="seconds to replace an interrupted unit")

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

    @property
    def market(self) -> SpotMarket | None:
        """The core's spot offer, None without a spot price (on-demand only)."""
        if self.spot_price is None or self.interruptions_per_hour is None:
            return None
        return SpotMarket(spot_price=self.spot_price,
                          interruptions_per_hour=self.interruptions_per_hour,
                          restart_s=self.restart_s if self.restart_s is not None else 0.0)

    def to_core(self) -> Resource:
        return Resource(
            name=self.name,
            kind=self.kind,
            price_per_hour=self.price_per_hour,
            count=self.count,
            memory_gb=self.memory_gb,
            network_gbps=self.network_gbps,
            market=self.market,
        )
