"""A finished job, a restart that trained nothing, the cost report and runs compared, in a
real browser on the ASGI server, as a plain member and as the owner (issue 25.9, 25.11,
25.12):

- the finished job's throughput chart draws the measured line where it can be read next
  to a far larger GPU estimate (a log axis), and the "predicted for what ran" line;
- after a restart that trained nothing, the cost report books it as start-up (nothing
  "slower") and shows run 1's measured figure, said to be run 1's; so does the job page;
- the job page's "Compare its 2 runs" overlays both runs, another job can be added, and
  "Download every sample (CSV)" downloads every row.

Screenshots at 1280 and 390 px of the finished job page, the cost report and the
comparison go to docs/screenshots/."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def _gpu_job(personas: Any, steps: int) -> Any:
    from webapp.jobs import samples, services
    from webapp.jobs.services import PlanSource, RunOptions

    gpu = PlanSource(project=personas.project, plan=samples.ctr_plan(
        ["cpu", "gpu-t4", "gpu-t4", "gpu-t4"]), model_name=samples.MODEL,
        model_size=samples.SIZE, batch_size=samples.BATCH, scheduler="exact",
        name="ctr_dnn tiny · plan #1 exact")
    return services.approve(personas.member, gpu, RunOptions(steps=steps,
                                                             binding={"gpu-t4": "cpu"}))


def _restart_that_trains_nothing(job: Any) -> None:
    """Run 2 from step 0: held its processes 2 s and failed before a mini-batch."""
    from webapp.background.models import Status, Work
    from webapp.jobs import records
    from webapp.jobs.models import Job
    from webapp.jobs.services import RUN_KIND

    second = Work.objects.create(project=job.project, kind=RUN_KIND, status=Status.FAILED,
                                 created_by=job.created_by, params={"job": job.pk, "run": 2},
                                 error="could not start the job's processes")
    Job.objects.filter(pk=job.pk).update(work=second, runs=2, last_step=0,
                                         last_throughput=None, last_loss=None, summary=None)
    rate = job.predicted_cost_per_hour / 3600
    for elapsed in (0.5, 1.0, 1.5, 2.0):
        records.record_sample(job.pk, 2, {  # type: ignore[arg-type]
            "step": 0, "total_steps": job.steps, "elapsed_s": elapsed, "samples_per_s": 0.0,
            "loss": None, "cost": rate * elapsed, "stages": [], "run_samples_per_s": None},
            base_cost=job.accrued_cost)


def test_finished_job_restart_cost_report_and_runs_compared(
    page: Any, browser: Any, shoot: Any, sign_in: Any, asgi_url: str, personas: Any
) -> None:
    from webapp.background import services as work_services
    from webapp.jobs.models import Job

    job = _gpu_job(personas, steps=16)
    work_services.run_work(job.work_id)
    # The page: a plan for a GPU cluster estimated 702k samples/s; this CPU ran the
    # GPU stages (substitutes) a thousand times slower. The sample plan's GPU figures are
    # small, so the estimate is set as that plan's was.
    Job.objects.filter(pk=job.pk).update(predicted_throughput=702_000.0)
    job = Job.objects.select_related("work", "project", "created_by").get(pk=job.pk)
    assert job.status == "succeeded", job.work.error
    measured = job.last_throughput
    other = _gpu_job(personas, steps=8)
    work_services.run_work(other.work_id)

    # The finished job page, as the member.
    sign_in(page, personas.member, asgi_url)
    page.goto(f"{asgi_url}/jobs/{job.pk}/")
    page.wait_for_load_state("networkidle")
    chart = page.evaluate("""() => {
        const gd = document.getElementById('chart-throughput');
        return { type: gd.layout.yaxis.type, names: gd.data.map((t) => t.name),
                 measured: gd.data[0].y.filter((v) => v > 0).length };
    }""")
    assert job.predicted_throughput / measured >= 20  # the page's own case: orders apart
    assert chart["type"] == "log", chart
    assert "predicted for what ran" in chart["names"] and chart["measured"] > 0
    shoot(page, "job-finished")

    _restart_that_trains_nothing(job)
    page.goto(f"{asgi_url}/jobs/{job.pk}/")
    note = page.inner_text("#earlier-measured")
    assert note == f"run 1 measured {measured:.1f} samples/s; run 2 has trained nothing"

    for who in ("member", "owner"):
        viewer = browser.new_context(viewport={"width": 1280, "height": 800})
        try:
            tab = viewer.new_page()
            sign_in(tab, getattr(personas, who), asgi_url)
            tab.goto(f"{asgi_url}/costs/")
            row = tab.locator(f"tr:has(a[href='/jobs/{job.pk}/'])")
            text = row.inner_text()
            assert f"{measured:.1f}" in text and "run 1; run 2 has trained nothing" in text
            assert "1 run held machines and trained no mini-batch" in text
            if who == "member":
                shoot(tab, "costs")
            # Runs compared, from the job page's link; then with the other job added.
            tab.goto(f"{asgi_url}/jobs/{job.pk}/")
            tab.click("#job-exports >> text=Compare its 2 runs")
            tab.wait_for_url(f"**/jobs/compare/?job={job.pk}")
            traces = tab.evaluate("document.getElementById('chart-compare-loss').data"
                                  ".map((t) => t.name)")
            assert traces == [f"#{job.pk} {job.name} · run 1"]  # run 2 has no loss
            names = tab.evaluate("document.getElementById('chart-compare-throughput').data"
                                 ".map((t) => t.name)")
            assert names == [f"#{job.pk} {job.name} · run {r}" for r in (1, 2)]
            tab.check(f"#compare-form input[name=job][value='{other.pk}']")
            tab.click("#compare-form button[type=submit]")
            tab.wait_for_load_state("networkidle")
            names = tab.evaluate("document.getElementById('chart-compare-loss').data"
                                 ".map((t) => t.name)")
            assert sorted(names) == [f"#{job.pk} {job.name} · run 1",
                                     f"#{other.pk} {other.name} · run 1"]
            if who == "owner":
                shoot(tab, "runs-compared")
            # Every sample as CSV, from the job page.
            tab.goto(f"{asgi_url}/jobs/{job.pk}/")
            with tab.expect_download() as got:
                tab.click("#job-exports >> text=Download every sample (CSV)")
            rows = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_text())))
            stored = job.metrics.count()
            assert len(rows) == stored and {r["run"] for r in rows} == {"1", "2"}
        finally:
            viewer.close()
