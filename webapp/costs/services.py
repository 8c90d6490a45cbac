"""Cost reports: per project and period, what plans estimated next to what jobs accrued.

Accrued cost in a period comes from the runtime's samples (each carries the run's accrued
dollars so far): per run, the last figure before the period's end minus the last before
its start. The estimate is the plan's $/hour times the time the plan predicts the job's
steps take, once per run started in the period.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Max, Min, Q
from django.utils import timezone

from webapp.jobs import interruptions, throughput
from webapp.jobs.models import Job, JobMetric
from webapp.projects.permissions import AnyUser, visible


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime  # exclusive

    @property
    def label(self) -> str:
        last = (self.end - timedelta(days=1)).date()
        return f"{self.start.date().isoformat()} to {last.isoformat()}"


@dataclass(frozen=True)
class CostRow:
    job_id: int
    job: str
    project_id: int
    project: str
    runs: int
    estimate_per_hour: float  # $ per hour, the plan's estimate
    estimate: float  # $ total, the plan's estimate for the runs in the period
    accrued: float  # $ total, measured in the period
    status: str = ""  # of the job's latest run
    # accrued - estimate of the runs started in the period, split (each $ total):
    startup: float = 0.0  # held while starting, before the first finished mini-batch
    slower: float = 0.0  # trained samples cost more (+) or less (-) than predicted
    stopped_early: float = 0.0  # samples asked for but not trained (negative: not spent)
    untrained_runs: int = 0  # runs that held machines and trained no mini-batch
    measured_throughput: float | None = None  # samples/s (one definition), of run `measured_run`
    measured_run: int | None = None  # the latest run that trained (an untrained one has none)
    latest_run: int = 0
    # Around spot notices (`jobs.interruptions`, the runs started in the period): counts, and
    # $ total saved by spot (None: no spot stage, or its on-demand prices are not here), lost
    # to preemption (work trained again, the drain) and spent restarting (start-up).
    preemptions: int = 0
    restarts: int = 0
    saved_by_spot: float | None = None
    lost_to_preemption: float = 0.0
    restart_cost: float = 0.0

    @property
    def measured_earlier(self) -> bool:
        """The figure is of an earlier run: the latest one trained nothing."""
        return self.measured_run is not None and self.measured_run != self.latest_run

    @property
    def difference(self) -> float:
        return self.startup + self.slower + self.stopped_early


@dataclass(frozen=True)
class Report:
    period: Period
    rows: list[CostRow]

    @property
    def estimate(self) -> float:
        return sum(r.estimate for r in self.rows)

    @property
    def accrued(self) -> float:
        return sum(r.accrued for r in self.rows)

    def by_project(self) -> list[dict[str, Any]]:
        totals: dict[int, dict[str, Any]] = {}
        for r in self.rows:
            t = totals.setdefault(r.project_id, {"project": r.project, "estimate": 0.0,
                                                  "accrued": 0.0, "jobs": 0})
            t["estimate"] += r.estimate
            t["accrued"] += r.accrued
            t["jobs"] += 1
        return sorted(totals.values(), key=lambda t: t["project"])


# Months a report may cover (docs/limits.md): wide enough for any real bill, and every
# one has a representable end (9999-12 would end in year 10000).
YEARS = (1970, 2999)


def month(text: str | None, today: date | None = None) -> Period:
    """`YYYY-MM` (default: this month) as a period in the server's time zone."""
    today = today or timezone.localdate()
    if not text:
        year, mon = today.year, today.month
    else:
        try:
            year, mon = (int(part) for part in text.strip().split("-"))
            date(year, mon, 1)
        except ValueError:
            raise ValidationError({"month": f"must be YYYY-MM, got {text[:40]!r}"}) from None
        if not YEARS[0] <= year <= YEARS[1]:
            raise ValidationError(
                {"month": f"must be a month of the years {YEARS[0]} to {YEARS[1]}, "
                          f"got {text[:40]!r}"})
    start = timezone.make_aware(datetime(year, mon, 1))
    end = timezone.make_aware(datetime(year + mon // 12, mon % 12 + 1, 1))
    return Period(start, end)


def report(user: AnyUser, period: Period, project_id: int | None = None) -> Report:
    """Rows for every visible job that accrued cost or started a run in the period."""
    jobs = visible(user, Job.objects.select_related("project", "work"))
    if project_id is not None:
        jobs = jobs.filter(project_id=project_id)
    accrued = _accrued(jobs, period)
    started = _runs_started(jobs, period)
    wanted = set(accrued) | set(started)
    rows = []
    totals = run_totals(wanted)
    figures = throughput.measured_many(jobs.filter(pk__in=wanted))
    chosen = list(jobs.filter(pk__in=wanted).only(
        "name", "project__name", "predicted_cost_per_hour", "predicted_throughput", "steps",
        "batch_size", "model_name", "model_size", "scheduler", "runs", "work__status",
        "last_throughput", "summary", "plan", "plan_result_id", "restarts", "max_restarts",
        "project_id",
    ))
    spot_facts = interruptions.runs_of_many(chosen)
    for job in chosen:
        runs = started.get(job.pk, {})
        split = difference(job, runs, totals)
        figure = figures.get(job.pk)
        spot_items = interruptions.items(job, runs, spot_facts[job.pk]) or {}
        rows.append(CostRow(
            job_id=job.pk, job=job_label(job), project_id=job.project_id,
            project=job.project.name, runs=len(runs),
            estimate_per_hour=job.predicted_cost_per_hour,
            estimate=len(runs) * estimated_run_cost(job), accrued=accrued.get(job.pk, 0.0),
            status=job.status, startup=split.startup, slower=split.slower,
            stopped_early=split.stopped_early, untrained_runs=split.untrained_runs,
            measured_throughput=figure.per_s if figure else None,
            measured_run=figure.run if figure else None, latest_run=job.runs,
            preemptions=spot_items.get("preemptions", 0), restarts=spot_items.get("restarts", 0),
            saved_by_spot=spot_items.get("saved_by_spot"),
            lost_to_preemption=spot_items.get("lost_to_preemption", 0.0),
            restart_cost=spot_items.get("restart_cost", 0.0),
        ))
    rows.sort(key=lambda r: (r.project, -r.job_id))
    return Report(period, rows)


def estimated_run_cost(job: Job) -> float:
    """$ total the plan predicts for one run: $/hour x the predicted hours of its steps."""
    if job.predicted_throughput <= 0:
        return 0.0
    hours = job.steps * job.batch_size / job.predicted_throughput / 3600
    return job.predicted_cost_per_hour * hours


def job_label(job: Job) -> str:
    """Model, size, plan and runs, so two jobs of one model can be told apart."""
    label = job.name or job.model_name
    if job.model_size and job.model_size not in label:
        label = f"{label} {job.model_size}"
    if job.scheduler and "plan" not in label:
        label = f"{label} · plan by {job.scheduler}"
    return f"{label} · {job.runs} run{'s' if job.runs != 1 else ''}"


@dataclass(frozen=True)
class Split:
    startup: float = 0.0
    slower: float = 0.0
    stopped_early: float = 0.0
    untrained_runs: int = 0


@dataclass(frozen=True)
class RunTotals:
    """One run's samples, reduced: what `difference` needs (costs only grow within a run)."""

    accrued: float
    last_step: int
    first_trained_s: float | None  # elapsed at the first sample past step 0


def run_totals(job_ids: Any) -> dict[tuple[int, int], RunTotals]:
    """(job id, run) -> RunTotals for every run of these jobs, in one query."""
    rows = (
        JobMetric.objects.filter(job_id__in=job_ids)
        .values("job_id", "run")
        .annotate(accrued=Max("cost"), last_step=Max("step"),
                  first_trained_s=Min("elapsed_s", filter=Q(step__gt=0)))
    )
    return {(r["job_id"], r["run"]): RunTotals(r["accrued"], r["last_step"],
                                                r["first_trained_s"]) for r in rows}


def difference(job: Job, runs: Mapping[int, int] | list[int],
               totals: dict[tuple[int, int], RunTotals] | None = None) -> Split:
    """accrued - estimate of these runs, split into start-up, slower than predicted and
    stopped early (they add up). Per run, from its samples: the accrued $ (held time,
    start-up and idle included), the start-up (to the first sample after a mini-batch
    finished: exact from the latest run's summary, else within one report window) and the
    samples trained. `runs`: run number -> the step it started from (a resumed run's
    checkpoint, from its work record; a list: every run from step 0). `totals` (from
    `run_totals`) saves a query per job in a report."""
    if not runs:
        return Split()
    starts = runs if isinstance(runs, Mapping) else dict.fromkeys(runs, 0)
    if totals is None:
        totals = run_totals([job.pk])
    rate = job.predicted_cost_per_hour / 3600  # $ per second held
    asked = estimated_run_cost(job)
    startup = slower = stopped = 0.0
    untrained = 0
    summary = job.summary or {}
    for run, resumed_at in starts.items():
        run_total = totals.get((job.pk, run))
        if run_total is None:
            stopped -= asked  # nothing held, nothing trained
            continue
        latest = run == job.runs
        # A resumed run's samples start at its checkpoint's step, trained or not: only the
        # steps past it were trained in this run (the latest run's summary knows for sure).
        first_step = resumed_at
        if latest and summary.get("start_step") is not None:
            first_step = int(summary["start_step"])
        accrued = run_total.accrued
        trained_steps = max(run_total.last_step - first_step, 0)
        began = run_total.first_trained_s
        if latest and summary.get("startup_s") is not None:
            began = summary["startup_s"]
        elif first_step:
            began = _first_past(job, run, first_step)
        if began is None or trained_steps <= 0:
            untrained += 1
            held_startup = accrued  # it held machines and trained nothing
        else:
            held_startup = min(accrued, rate * began)
        done = (asked * trained_steps / job.steps) if job.steps else 0.0
        startup += held_startup
        slower += accrued - held_startup - done
        stopped += done - asked
    return Split(startup, slower, stopped, untrained)


def _first_past(job: Job, run: int, step: int) -> float | None:
    """Elapsed seconds at the first sample past `step` (a resumed run without a summary)."""
    return (JobMetric.objects.filter(job=job, run=run, step__gt=step)
            .aggregate(first=Min("elapsed_s"))["first"])


def to_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["period_start", "period_end", "project", "job_id", "job", "status", "runs",
                     "estimate_usd_per_hour", "estimate_usd_total", "accrued_usd_total",
                     "startup_usd", "slower_than_predicted_usd", "stopped_early_usd",
                     "preemptions", "restarts", "saved_by_spot_usd", "lost_to_preemption_usd",
                     "restarts_usd"])
    end = (report.period.end - timedelta(days=1)).date().isoformat()
    for r in report.rows:
        writer.writerow([report.period.start.date().isoformat(), end, r.project, r.job_id,
                         r.job, r.status, r.runs, f"{r.estimate_per_hour:.4f}",
                         f"{r.estimate:.6f}", f"{r.accrued:.6f}", f"{r.startup:.6f}",
                         f"{r.slower:.6f}", f"{r.stopped_early:.6f}", r.preemptions, r.restarts,
                         "" if r.saved_by_spot is None else f"{r.saved_by_spot:.6f}",
                         f"{r.lost_to_preemption:.6f}", f"{r.restart_cost:.6f}"])
    return out.getvalue()


def _accrued(jobs: Any, period: Period) -> dict[int, float]:
    per_run = (
        JobMetric.objects.filter(job__in=jobs.values("pk"), recorded_at__lt=period.end)
        .values("job_id", "run")
        .annotate(
            upto_end=Max("cost"),
            before=Max("cost", filter=Q(recorded_at__lt=period.start)),
        )
    )
    totals: dict[int, float] = {}
    for row in per_run:
        amount = row["upto_end"] - (row["before"] or 0.0)
        if amount > 0:
            totals[row["job_id"]] = totals.get(row["job_id"], 0.0) + amount
    return totals


def _runs_started(jobs: Any, period: Period) -> dict[int, dict[int, int]]:
    """Job id -> {run number: the step it started from} of its runs started in the period."""
    from webapp.background.models import Work
    from webapp.jobs.services import RUN_KIND

    counts: dict[int, dict[int, int]] = {}
    runs = Work.objects.filter(
        kind=RUN_KIND, project_id__in=jobs.values("project_id"),
        created_at__gte=period.start, created_at__lt=period.end,
    ).values_list("params", flat=True)
    ids = set(jobs.values_list("pk", flat=True))
    for params in runs:
        job_id = params.get("job")
        if job_id in ids:
            resume = params.get("resume") or {}
            counts.setdefault(job_id, {})[int(params.get("run", 1))] = int(
                resume.get("step") or 0)
    return counts
