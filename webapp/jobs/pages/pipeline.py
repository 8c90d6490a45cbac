"""The pipeline runner's part of the job page: measured next to predicted, like with like
(issue 16): each stage's measured time per mini-batch and busy share beside the plan's,
which stages ran on a substitute, and the plan re-evaluated with the stage times that ran."""

from __future__ import annotations

from typing import Any

from heterps_core.plan import Plan
from heterps_core.runtime import sync
from heterps_core.runtime.throughput import error
from webapp.jobs.figures import figure_tiers
from webapp.jobs.measured import substitute, threshold
from webapp.jobs.models import Job
from webapp.jobs.pages.base import RunnerPage


class PipelinePage(RunnerPage):
    def context(self, job: Job, series: list[dict[str, Any]]) -> dict[str, Any]:
        return {**super().context(job, series), **comparison(job, series),
                "compares_stages": True}


def comparison(job: Job, series: list[dict[str, Any]]) -> dict[str, Any]:
    """The final summary's stage rows, else the latest sample's. The error figure is against
    the prediction for what ran when anything was substituted, never against a prediction
    for hardware that did not run."""
    plan = Plan.from_dict(job.plan)
    summary = job.summary or {}
    flushes = sync.get(job.sync_mode).flushes
    if summary.get("stages"):
        rows = summary["stages"]
        as_run = summary.get("predicted_throughput_as_run")
        measured = summary.get("throughput")
    else:
        rows = _live_rows(job, plan, series[-1]["stages"] if series else [])
        as_run = _as_run(rows, job.batch_size, flushes)
        measured = job.last_throughput
    rows = [_shown(r) for r in rows]
    substitutes = [r for r in rows if r.get("substitute")]
    planned = job.flushed_throughput or job.predicted_throughput
    against = as_run if substitutes else planned
    wrong = error(measured, against)
    limit = threshold()
    return {
        "prediction_error_pct": None if wrong is None else 100 * wrong,
        "stages_off": _off(rows, limit), "threshold_pct": 100 * limit,
        "stage_rows": rows, "substitutes": substitutes, "as_run": as_run,
        "planned_for_run": planned, "error_against": "as_run" if substitutes else "plan",
        "prediction_error": wrong,
        "stage_plan": {"stages": [{"bound_to": r["bound_to"], "substitute": r["substitute"]}
                                  for r in rows],
                       "flushes": flushes, "batch_size": job.batch_size,
                       # the throughput chart's "predicted for what ran" line
                       "as_run": as_run if substitutes else None},
        "startup_s": summary.get("startup_s", series[-1].get("startup_s") if series else None),
        "span_s": summary.get("span_s", series[-1].get("span_s") if series else None),
    }


def _off(rows: list[dict[str, Any]], limit: float) -> list[dict[str, Any]]:
    """Stages on their own hardware measured further from the prediction than `limit`."""
    off = []
    for r in rows:
        measured, predicted = r.get("measured_time_per_batch_s"), r.get(
            "predicted_time_per_batch_s")
        if r.get("substitute") or not measured or not predicted:
            continue
        if abs(measured / predicted - 1) > limit:
            off.append({**r, "difference_pct": 100 * (measured / predicted - 1)})
    return off


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A stage row with its figures in the table's units (ms, %)."""
    def scaled(key: str, by: float) -> float | None:
        value = row.get(key)
        return None if value is None else value * by

    return {**row, "measured_ms": scaled("measured_time_per_batch_s", 1000),
            "predicted_ms": scaled("predicted_time_per_batch_s", 1000),
            "busy_pct": scaled("busy_share", 100), "idle_pct": scaled("idle_share", 100)}


def _live_rows(job: Job, plan: Plan, stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The latest sample's stages; where each ran is in the sample (the runner adds it)."""
    records = figure_tiers(job)
    rows = []
    for i, stage in enumerate(plan.stages):
        got = stages[i] if i < len(stages) else {}
        target = job.binding.get(stage.resource, "cpu")
        host = str(got.get("host") or "")
        rows.append({
            "stage": i + 1, "resource": stage.resource, "units": stage.units or 1,
            "bound_to": target, "host": host,
            "substitute": substitute(records, stage.resource, target, host),
            "measured_time_per_batch_s": got.get("time_per_batch_s"),
            "predicted_time_per_batch_s": stage.time_per_batch_s,
            "busy_share": got.get("busy_share"),
            "idle_share": None if got.get("busy_share") is None else 1 - got["busy_share"],
        })
    return rows


def _as_run(rows: list[dict[str, Any]], batch_size: int, flushes: bool) -> float | None:
    """The live twin of `throughput.predicted_as_run`, from the latest sample's stage times."""
    times = [r["measured_time_per_batch_s"] for r in rows]
    if not rows or any(not t for t in times):
        return None
    rates = [r["units"] * batch_size / t for r, t in zip(rows, times, strict=True)]
    return 1.0 / sum(1.0 / r for r in rates) if flushes and len(rates) > 1 else min(rates)
