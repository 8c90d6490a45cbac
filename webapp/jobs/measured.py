"""Measured profiles: what finished pipeline runs measured per stage (layer group), with
provenance ("measured in job N, run R"), next to the plan's prediction. Read from the jobs'
stored summaries; the model page and the job page show them."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from webapp.jobs.models import Job
from webapp.jobs.options import PIPELINE

# A stage whose measured time differs from the prediction by more than this is flagged.
DEFAULT_THRESHOLD = 0.15


def threshold() -> float:
    return float(getattr(settings, "HETERPS_MEASURED_THRESHOLD", DEFAULT_THRESHOLD))


def stage_rows(job: Job, layer_names: list[str] | None = None) -> list[dict[str, Any]]:
    """The job's last run, per stage: layer group, resource, where it ran, measured vs
    predicted ms per mini-batch (one unit) and whether they differ by more than the
    threshold (only where like is compared with like: not on a substitute)."""
    summary = job.summary or {}
    stages = summary.get("stages") or []
    plan_stages = (job.plan or {}).get("stages") or []
    names = layer_names or []
    limit = threshold()
    rows = []
    for i, stage in enumerate(stages):
        layers = plan_stages[i].get("layers", []) if i < len(plan_stages) else []
        group = _group(layers, names)
        measured = stage.get("measured_time_per_batch_s")
        predicted = stage.get("predicted_time_per_batch_s")
        diff = (measured - predicted) / predicted if measured and predicted else None
        rows.append({
            "job": job.pk, "run": job.runs,
            "provenance": f"measured in job {job.pk}, run {job.runs}",
            "stage": stage.get("stage", i + 1), "layers": group, "resource": stage.get("resource"),
            "bound_to": stage.get("bound_to"), "substitute": bool(stage.get("substitute")),
            "measured_ms": None if measured is None else 1000 * measured,
            "predicted_ms": None if predicted is None else 1000 * predicted,
            "difference_pct": None if diff is None else 100 * diff,
            "differs": diff is not None and abs(diff) > limit and not stage.get("substitute"),
        })
    return rows


def for_model(project_id: int, runtime_model: str, size: str,
              layer_names: list[str] | None = None, limit: int = 10) -> list[dict[str, Any]]:
    """Measured stage rows of the latest finished pipeline runs of one model in a project."""
    jobs = (Job.objects.filter(project_id=project_id, model_name=runtime_model,
                               runner=PIPELINE, summary__isnull=False)
            .only("plan", "summary", "runs").order_by("-pk"))
    if size:
        jobs = jobs.filter(model_size=size)
    rows: list[dict[str, Any]] = []
    for job in jobs[:limit]:
        rows.extend(stage_rows(job, layer_names))
    return rows


def _group(layers: list[int], names: list[str]) -> str:
    if not layers:
        return "-"
    first, last = layers[0], layers[-1]
    if last < len(names):
        return names[first] if first == last else f"{names[first]} … {names[last]}"
    return f"layer {first}" if first == last else f"layers {first} to {last}"
