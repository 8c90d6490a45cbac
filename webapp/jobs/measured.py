"""Measured profiles: what pipeline runs measured per stage (layer group), with provenance
("measured in job N, run R"), next to the plan's prediction (issue 16, the closed loop).

Each run's stage times are stored as `MeasuredStage` rows: live from every sample while it
runs, and final from its summary. The model page lists them; the job page flags stages
that differ from the prediction by more than the threshold and offers to re-plan with them
(`webapp.jobs.replan`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings

from heterps_core.provenance import ResourceProvenance
from heterps_core.runtime.throughput import is_substitute
from webapp.environment import SettingsError
from webapp.jobs import restart_samples
from webapp.jobs.figures import figure_tiers
from webapp.jobs.models import Job, MeasuredStage
from webapp.jobs.options import PIPELINE

# A stage whose measured time differs from the prediction by more than this is flagged.
DEFAULT_THRESHOLD = 0.15


def threshold() -> float:
    """The share (0.15 = 15%) by which measured may differ from predicted before a stage is
    flagged and re-planning is offered: settings.HETERPS_MEASURED_THRESHOLD, else the
    environment's HETERPS_MEASURED_THRESHOLD, else 0.15."""
    given = getattr(settings, "HETERPS_MEASURED_THRESHOLD", None)
    if given is not None:
        return float(given)
    return threshold_from(os.environ)


def threshold_from(env: Mapping[str, str]) -> float:
    raw = env.get("HETERPS_MEASURED_THRESHOLD")
    if raw is None or not raw.strip():
        return DEFAULT_THRESHOLD
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError("HETERPS_MEASURED_THRESHOLD",
                            f"must be a share such as 0.15 (15%), got {raw!r}") from None
    if not 0 < value <= 10:
        raise SettingsError("HETERPS_MEASURED_THRESHOLD",
                            f"must be greater than 0 and at most 10 (1000%), got {raw!r}")
    return value


def record(job: Job, run: int, stages: Iterable[Mapping[str, Any]], step: int,
           final: bool) -> None:
    """Store (or update) the run's measured stage rows from a sample's or the summary's
    `stages`. A live sample never overwrites the run's final figures. Like with like by
    provenance (`substitute`): the summary's own judgement, else `substitute(...)`."""
    plan_stages = (job.plan or {}).get("stages") or []
    binding = job.binding
    records = figure_tiers(job)
    for i, stage in enumerate(stages):
        number = int(stage.get("stage", i + 1))
        measured = stage.get("measured_time_per_batch_s", stage.get("time_per_batch_s"))
        if not measured:
            continue  # nothing finished yet on this stage
        resource = str(stage.get("resource") or "")
        target = str(stage.get("bound_to") or binding.get(resource, "cpu"))
        layers = plan_stages[number - 1].get("layers", []) if number <= len(plan_stages) else []
        values = {
            "project_id": job.project_id, "model_name": job.model_name,
            "model_size": job.model_size, "layers": list(layers), "resource": resource,
            "bound_to": target, "host": str(stage.get("host") or ""),
            "substitute": bool(stage.get("substitute", substitute(
                records, resource, target, str(stage.get("host") or "")))),
            "units": int(stage.get("units") or 1), "batch_size": job.batch_size,
            "measured_time_per_batch_s": float(measured),
            "predicted_time_per_batch_s": stage.get("predicted_time_per_batch_s"),
            "busy_share": stage.get("busy_share"), "step": step, "final": final,
        }
        keep_final = not final and MeasuredStage.objects.filter(
            job=job, run=run, stage=number, final=True).exists()
        if not keep_final:
            MeasuredStage.objects.update_or_create(job=job, run=run, stage=number,
                                                   defaults=values)


def substitute(records: Mapping[str, ResourceProvenance], resource: str, target: str,
               host: str) -> bool:
    """Whether a stage of `resource` bound to `target` that ran on machine `host` ran on a
    substitute, by the provenance of the figures its plan was made with (`records`, from
    `figures.figure_tiers`): the one rule of the job page, the stored measured profile and
    the re-plan (`heterps_core.runtime.throughput.is_substitute`)."""
    return is_substitute(records.get(resource), target, host)


def record_sample(job: Job, run: int, sample: Mapping[str, Any]) -> None:
    """A live sample's stage times, as the run's measured profile so far."""
    if sample.get("stages"):
        record(job, run, sample["stages"], int(sample.get("step") or 0), final=False)


def record_summary(job: Job, run: int, summary: Mapping[str, Any]) -> None:
    """The finished run's stage times (whole run), final, and its start-up as a restart
    time of the types it ran on like with like (restart_samples.py)."""
    if summary.get("stages"):
        record(job, run, summary["stages"], int(summary.get("steps") or 0), final=True)
        restart_samples.record(job, run, summary)


def for_run(job: Job, run: int | None = None) -> list[MeasuredStage]:
    """The measured stage rows of one run (default: the job's latest)."""
    return list(MeasuredStage.objects.filter(job=job, run=run or job.runs).order_by("stage"))


def row(entry: MeasuredStage, names: list[str] | None = None) -> dict[str, Any]:
    """One measured row as the pages show it (ms per mini-batch of one unit)."""
    measured, predicted = entry.measured_time_per_batch_s, entry.predicted_time_per_batch_s
    diff = (measured - predicted) / predicted if measured and predicted else None
    return {
        "job": entry.job_id, "run": entry.run, "provenance": entry.provenance,
        "final": entry.final, "stage": entry.stage, "layers": _group(entry.layers, names or []),
        "resource": entry.resource, "bound_to": entry.bound_to, "substitute": entry.substitute,
        "units": entry.units, "batch_size": entry.batch_size,
        "measured_ms": None if measured is None else 1000 * measured,
        "predicted_ms": None if predicted is None else 1000 * predicted,
        "difference_pct": None if diff is None else 100 * diff,
        # Only like with like: a substitute's time is of other hardware than predicted.
        "differs": diff is not None and abs(diff) > threshold() and not entry.substitute,
    }


def stage_rows(job: Job, layer_names: list[str] | None = None) -> list[dict[str, Any]]:
    """The job's latest run, per stage: measured vs predicted and whether they differ."""
    return [row(e, layer_names) for e in for_run(job)]


def for_model(project_id: int, runtime_model: str, size: str,
              layer_names: list[str] | None = None, limit: int = 40) -> list[dict[str, Any]]:
    """Measured stage rows of one model's latest pipeline runs in a project, newest first."""
    entries = MeasuredStage.objects.filter(project_id=project_id, model_name=runtime_model,
                                           job__runner=PIPELINE)
    if size:
        entries = entries.filter(model_size=size)
    return [row(e, layer_names) for e in entries.order_by("-job_id", "-run", "stage")[:limit]]


def _group(layers: list[int], names: list[str]) -> str:
    if not layers:
        return "-"
    first, last = layers[0], layers[-1]
    if last < len(names):
        return names[first] if first == last else f"{names[first]} … {names[last]}"
    return f"layer {first}" if first == last else f"layers {first} to {last}"
