"""TEMPORARY: screenshots for the review (deleted after use)."""
import shutil
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings as dj

from webapp.background import services as work_services
from webapp.jobs import services
from webapp.jobs.models import Runner
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db(transaction=True)
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update"]


def test_shots(live_server: Any, client: Any, personas: Any, source: Any, two_stage_plan: Any,
               monkeypatch: Any) -> None:
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    project = personas.project
    model = apps.get_model("modelzoo", "RegisteredModel").objects.create(
        project=project, name="CTR tiny", zoo_name="ctr_dnn", size="tiny")
    cluster = apps.get_model("planning", "Cluster").objects.create(project=project, name="c")
    request = apps.get_model("planning", "PlanningRequest").objects.create(
        project=project, model=model, cluster=cluster, batch_size=64, throughput_target=100.0,
        instance={}, schedulers=["exact"])
    pr = apps.get_model("planning", "PlanResult").objects.create(
        project=project, request=request, scheduler="exact", plan=two_stage_plan,
        feasible=True, throughput=two_stage_plan["throughput"],
        cost_per_hour=two_stage_plan["cost_per_hour"])
    job = services.approve(personas.member, source, RunOptions(
        steps=300, runner=Runner.DATAPARALLEL, sync_mode="ashl",
        sync_params={"ahl_steps": 4, "plateau_window": 30, "plateau_delta": 0.2},
        dataparallel={"workers": 3, "slowdowns": "1,1,4", "backend": "emulated"}))
    work_services.run_work(job.work_id)
    client.force_login(personas.member)
    cookie = client.cookies[dj.SESSION_COOKIE_NAME].value
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        for width in (1280, 390):
            ctx = b.new_context(viewport={"width": width, "height": 900})
            ctx.add_cookies([{"name": dj.SESSION_COOKIE_NAME, "value": cookie,
                              "url": live_server.url}])
            page = ctx.new_page()
            page.goto(f"{live_server.url}/jobs/approve/{pr.pk}/")
            page.screenshot(path=f"/tmp/shots/approve-{width}.png", full_page=True)
            page.check("input[name=runner][value=dataparallel]")
            page.select_option("select[name=dp_mode]", "ashl")
            page.screenshot(path=f"/tmp/shots/approve-dp-{width}.png", full_page=True)
            page.fill("input[name=dp_ashl__topk_ratio]", "2")
            page.click("button[type=submit]")
            page.screenshot(path=f"/tmp/shots/approve-bad-{width}.png", full_page=True)
            page.goto(f"{live_server.url}/jobs/{job.pk}/")
            page.wait_for_timeout(1500)
            page.screenshot(path=f"/tmp/shots/job-{width}.png", full_page=True)
            ctx.close()
        b.close()
