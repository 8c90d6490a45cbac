"""The job page and the cost report after a real tiny run whose GPU type ran on this CPU,
in a real browser at 1280 and 390 px: the substitute banner, both predictions, the stage
table and the cost split, with screenshots in test-artifacts/measured/ to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "measured"


def test_job_page_and_cost_report_after_a_substitute_run(
    page: Any, browser: Any, shoot: Any, asgi_url: str, personas: Any
) -> None:
    from webapp.background import services as work_services
    from webapp.jobs import samples, services
    from webapp.jobs.services import PlanSource, RunOptions

    gpu = PlanSource(project=personas.project, plan=samples.ctr_plan(
        ["cpu", "gpu-t4", "gpu-t4", "gpu-t4"]), model_name=samples.MODEL,
        model_size=samples.SIZE, batch_size=samples.BATCH, scheduler="exact",
        name="ctr_dnn tiny · plan #1 exact")
    job = services.approve(personas.member, gpu, RunOptions(steps=16, binding={"gpu-t4": "cpu"}))
    work_services.run_work(job.work_id)
    personas.viewer.set_password("pw-viewer-16")
    personas.viewer.save()
    page.goto(f"{asgi_url}/login/")
    page.fill("#id_username", "viewer")
    page.fill("#id_password", "pw-viewer-16")
    page.click("button[type=submit]")
    page.wait_for_url(f"{asgi_url}/")

    page.goto(f"{asgi_url}/jobs/{job.pk}/")
    banner = page.locator("#substitute-banner")
    assert banner.is_visible()
    assert "stage 2 (gpu-t4) ran on cpu" in banner.inner_text()
    text = page.inner_text("body")
    assert "Throughput, predicted for what ran" in text
    assert "for the planned hardware, which did not run" in text
    assert "Prediction error (vs predicted for what ran)" in text
    rows = page.locator("#stages tbody tr")
    assert rows.count() == 2 and "(substitute)" in rows.nth(1).inner_text()
    shoot(page, "job")

    page.goto(f"{asgi_url}/costs/")
    report = page.inner_text("body")
    assert "start-up, slower, stopped early" in report and "succeeded" in report
    shoot(page, "costs")
