"""Profiling rules: start a profile run, record what heterps_core's profiler measured, and
turn it into per-layer figures for every resource type of the project."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from heterps_core.limits import LIMITS
from heterps_core.profiler.instance_builder import build_instance
from heterps_core.profiler.measure import Measurement
from heterps_core.profiler.result import ModelProfile
from webapp.background.services import start_work
from webapp.catalogue.hardware import catalogue_for
from webapp.catalogue.models import ResourceType
from webapp.modelzoo.models import RegisteredModel
from webapp.profiling.models import LayerResult, ProfileRun, Source
from webapp.projects.permissions import Action, AnyUser, check

KIND = "profile"
MAX_BATCH = 65_536
MAX_REPEATS = int(LIMITS["repeats"].high)  # the API's and the CLI's bound
MEASURED_RESOURCE = "this machine"


def start_profile(
    user: AnyUser, model: RegisteredModel, batch_size: int | None = None,
    repeats: int = 3,
) -> ProfileRun:
    """Create a profile run and enqueue its work; members and owners only."""
    check(user, model.project_id, Action.EDIT)
    if not model.profilable:
        raise ValidationError({"model": "only zoo models can be profiled in the browser; "
                                        "profile an imported model with `heterps profile "
                                        "--import` and import its chain"})
    batch_size = batch_size or model.default_batch_size
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValidationError({"batch_size": f"must be between 1 and {MAX_BATCH}"})
    if not 1 <= repeats <= MAX_REPEATS:
        raise ValidationError({"repeats": f"must be between 1 and {MAX_REPEATS}"})
    with transaction.atomic():
        run = ProfileRun.objects.create(project_id=model.project_id, model=model,
                                        batch_size=batch_size, repeats=repeats,
                                        created_by=user if user.is_authenticated else None)
        run.work = start_work(user, model.project, KIND, {"run": run.pk})
        run.save(update_fields=["work"])
    return run


def record_profile(run_id: int, profile: ModelProfile) -> ProfileRun:
    """Store the profile and its per-layer figures: measured on the profiling device, and
    estimated (roofline from that measurement) for each resource type of the project."""
    with transaction.atomic():
        run = ProfileRun.objects.select_for_update().get(pk=run_id)
        run.profile = profile.to_dict()
        run.device = profile.device.label[:120]
        run.measured_at = datetime.fromisoformat(profile.measured_at)
        run.save(update_fields=["profile", "device", "measured_at"])
        run.results.all().delete()
        LayerResult.objects.bulk_create(_measured(run, profile) + _estimated(run, profile))
    return run


def latest_profile(model: RegisteredModel, batch_size: int | None = None) -> ProfileRun | None:
    runs = ProfileRun.objects.filter(model=model, profile__isnull=False)
    if batch_size is not None:
        runs = runs.filter(batch_size=batch_size)
    return runs.order_by("-created_at", "-id").first()


def layer_table(run: ProfileRun | None) -> dict[str, Any]:
    """Rows (one per layer, seconds per resource) and columns for the model page and chart."""
    if run is None:
        return {"resources": [], "rows": []}
    results = list(run.results.order_by("id"))  # measured first, then the catalogue order
    resources = list(dict.fromkeys(r.resource for r in results))
    rows: dict[int, dict[str, Any]] = {}
    for r in results:
        row = rows.setdefault(r.index, {"index": r.index, "layer": r.layer, "kind": r.kind,
                                        "memory_gb": r.memory_gb, "cells": {}})
        row["cells"][r.resource] = {"seconds": r.seconds, "ms": r.seconds * 1e3,
                                      "source": r.source, "device": r.device}
    ordered = [rows[i] for i in sorted(rows)]
    for row in ordered:
        row["cells"] = [row["cells"].get(name) for name in resources]
    return {"resources": resources, "rows": ordered,
            "headers": [_header(name, run) for name in resources]}


def _header(resource: str, run: ProfileRun) -> str:
    """A column's name, with the precision a GPU type's figures train at (issue 21)."""
    from webapp.catalogue.models import ResourceType

    found = ResourceType.objects.filter(project_id=run.project_id, name=resource).first()
    precision = found.precision_label if found is not None else ""
    return f"{resource} · {precision}" if precision else resource


def layer_chart(table: dict[str, Any]) -> dict[str, Any]:
    """The bar chart's data: seconds per layer (rows) per resource (columns)."""
    return {"resources": table["resources"],
            "layers": [row["layer"] for row in table["rows"]],
            "seconds": [[cell["seconds"] if cell else None for cell in row["cells"]]
                        for row in table["rows"]]}


def load_note(profile: ModelProfile) -> str:
    """'' or why a profile's figures are labelled as measured under load."""
    use = profile.cpu_use
    if use is None or not use.under_load:
        return ""
    return f"; measured under load: {use.describe()}"


def measurement(run: ProfileRun) -> dict[str, Any] | None:
    """This machine's measurement of a done run: each layer's median with its spread (the
    median's relative 95% half-width; None for runs stored before it was kept) and runs, and
    how much of the cores other processes held meanwhile."""
    if run.profile is None:
        return None
    profile = ModelProfile.from_dict(run.profile)
    use = profile.cpu_use
    return {
        "under_load": profile.under_load,
        "held": use.held if use is not None else None,
        "load": load_note(profile).removeprefix("; "),
        "layers": [_measured_row(layer.name, layer.time) for layer in profile.layers],
        "held_label": f"{use.held:.0%}" if use is not None else "",
    }


def _measured_row(name: str, time: Measurement) -> dict[str, Any]:
    spread = time.median_spread
    return {"layer": name, "median_s": time.median_s, "median_spread": spread,
            "repeats": time.repeats, "median_ms": time.median_s * 1e3,
            "spread_pct": None if spread is None else spread * 100}


def _measured(run: ProfileRun, profile: ModelProfile) -> list[LayerResult]:
    return [
        LayerResult(run=run, index=layer.index, layer=layer.name, kind=layer.kind,
                    resource=MEASURED_RESOURCE, seconds=layer.time.median_s,
                    source=Source.MEASURED, device=profile.device.label[:120],
                    memory_gb=layer.memory_bytes / 1e9)
        for layer in profile.layers
    ]


def _at(detail: dict[str, Any]) -> str:
    """' at tf32' for a GPU figure estimated at a precision, else ''."""
    return f" at {detail['precision']}" if "precision" in detail else ""


def _estimated(run: ProfileRun, profile: ModelProfile) -> list[LayerResult]:
    resource_types = list(ResourceType.objects.filter(project_id=run.project_id))
    if not resource_types:
        return []
    built = build_instance(profile, catalogue_for(resource_types), throughput_target=1.0)
    index = {layer.name: layer for layer in profile.layers}
    return [
        LayerResult(run=run, index=index[f.layer].index, layer=f.layer, kind=index[f.layer].kind,
                    resource=f.resource, seconds=f.seconds, source=f.source,
                    device=f"{f.device}{_at(f.detail)} (roofline from "
                           f"{profile.device.label})"[:120],
                    memory_gb=index[f.layer].memory_bytes / 1e9)
        for f in built.figures
    ]
