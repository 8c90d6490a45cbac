"""A resource type of the spec (§1): `count` identical units with a price, memory, network."""

from __future__ import annotations

import statistics
from typing import NamedTuple

from django.db import models

from heterps_core.instance import Resource, SpotMarket
from webapp.catalogue.hardware import precision_of
from webapp.catalogue.validation import ALL_FIELDS, DEFAULT_RESTART_S, clean
from webapp.projects.models import ProjectOwned

RESTART_RUNS = 20  # the latest runs a measured restart time is the median of


class RestartFigure(NamedTuple):
    seconds: float
    source: str  # "given" | "measured" | "assumed"
    label: str


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
    # Null: measured from the type's runs (RestartSample), else DEFAULT_RESTART_S assumed.
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
                          restart_s=self.restart().seconds)

    def restart(self) -> RestartFigure:
        """Seconds to replace an interrupted unit, and where the figure comes from: set on
        the type, else measured (the median start-up of its latest runs, like with like:
        stages that ran on this type's hardware), else the assumed default."""
        if self.restart_s is not None:
            return RestartFigure(self.restart_s, "given", "set on the resource type")
        samples = list(self.restart_samples.order_by("-recorded_at", "-id")[:RESTART_RUNS])
        if samples:
            seconds = statistics.median(s.startup_s for s in samples)
            runs = ", ".join(s.source for s in samples[:3]) + (", ..." if len(samples) > 3
                                                               else "")
            return RestartFigure(seconds, "measured", f"median start-up of {len(samples)} "
                                 f"run(s) on this type ({runs})")
        return RestartFigure(DEFAULT_RESTART_S, "assumed",
                             "assumed until a run on this type measures it")

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


class RestartSample(ProjectOwned):
    """One run's start-up (launch to its first finished mini-batch) on a resource type's own
    hardware: what replacing an interrupted unit costs, measured. Written by the jobs app
    when a run finishes (webapp/jobs/restart_samples.py), only for stages that ran on
    hardware like the type's (not a substitute)."""

    resource_type = models.ForeignKey(ResourceType, on_delete=models.CASCADE,
                                      related_name="restart_samples")
    source = models.CharField(max_length=60)  # "job 12 run 3"
    startup_s = models.FloatField()
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["resource_type", "source"],
                                               name="one_restart_sample_per_run")]
