"""The whole journey in a real browser, on the ASGI server (websockets live): log in, add
resource types, pick a zoo model, profile it, plan with exact + rl + greedy, compare,
approve the chosen plan, watch live metrics arrive on the job page, cancel; then a second
user who is no member finds nothing (404). Runs on the embedded default and, with
DATABASE_URL / REDIS_URL, on PostgreSQL + Redis. A failed test leaves a screenshot in
test-artifacts/ (browser conftest); the job pages' screenshots go to test-artifacts/jobs/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "jobs"


def _log_in(page: Any, url: str, name: str, password: str) -> None:
    page.goto(f"{url}/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/")


def _add_resource_type(page: Any, url: str, project: Any, name: str, price: str) -> None:
    page.goto(f"{url}/admin/catalogue/resourcetype/add/")
    page.select_option("#id_project", str(project.pk))
    page.fill("#id_name", name)
    page.fill("#id_kind", "cpu")
    page.fill("#id_price_per_hour", price)
    page.fill("#id_count", "4")
    page.fill("#id_memory_gb", "64")
    page.fill("#id_network_gbps", "10")
    page.click("input[name=_save]")
    page.wait_for_selector("ul.messagelist li.success")


def test_the_whole_journey(page: Any, browser: Any, shoot: Any, asgi_url: str,
                           django_user_model: Any, worker: Any, settings: Any, tmp_path: Path,
                           until: Any, compare: Any) -> None:
    from django.contrib.auth.models import Permission

    settings.VAR_DIR = tmp_path  # the job's process logs

    from heterps_core import schedulers
    from webapp.projects.services import create_project

    ada = django_user_model.objects.create_user("ada", password="lovelace-1843", is_staff=True)
    ada.user_permissions.add(*Permission.objects.filter(content_type__app_label="catalogue"))
    django_user_model.objects.create_user("eve", password="outsider-1984")
    project = create_project(ada, "Ranking models")
    url = asgi_url
    wanted = [n for n in ("exact", "rl", "greedy") if n in schedulers.names()]

    _log_in(page, url, "ada", "lovelace-1843")
    # Resource types, with a validation message on the form first.
    page.goto(f"{url}/admin/catalogue/resourcetype/add/")
    page.select_option("#id_project", str(project.pk))
    page.fill("#id_name", "cpu-small")
    page.fill("#id_kind", "cpu")
    page.fill("#id_price_per_hour", "0.5")
    page.fill("#id_count", "0")
    page.fill("#id_memory_gb", "64")
    page.fill("#id_network_gbps", "10")
    page.click("input[name=_save]")
    # The core's range in its own words (heterps_core.limits), as every entry point says it.
    assert "must be greater than 0, got 0" in page.wait_for_selector(
        "#id_count_error").inner_text()
    _add_resource_type(page, url, project, "cpu-small", "0.5")
    _add_resource_type(page, url, project, "cpu-large", "1.5")

    # A zoo model, profiled on this machine.
    page.goto(f"{url}/models/project/{project.pk}/")
    page.select_option("#id_zoo_name", "ctr_dnn")
    page.select_option("#id_size", "tiny")
    page.click("#add-zoo button[type=submit]")
    page.wait_for_url("**/models/*/")
    page.fill("#profile-form #id_batch_size", "64")
    page.fill("#profile-form #id_repeats", "1")
    page.click("#profile-form button[type=submit]")
    page.wait_for_url("**/profiling/*/")
    until(page, "table.layers")

    # A cluster of both types; plan with exact + rl + greedy and compare.
    page.click("text=Plan this model")
    page.wait_for_url(f"**/planning/project/{project.pk}/**")
    page.fill("#cluster-form #id_name", "Both CPUs")
    for box in page.locator("#cluster-form input[type=checkbox]").all():
        box.check()
    page.click("#cluster-form button[type=submit]")
    page.wait_for_url(f"{url}/planning/project/{project.pk}/")
    page.select_option("#plan-form #id_model", label="ctr_dnn-tiny")
    page.select_option("#plan-form #id_cluster", label="Both CPUs")
    page.fill("#plan-form #id_throughput_target", "100")
    page.fill("#plan-form #id_budget_s", "1")
    chosen = compare(page, wanted)

    # Approve the chosen plan, with its run options.
    chosen.locator("a").first.click()
    page.wait_for_url("**/planning/result/*/")
    page.click("#approve-form button[type=submit]")
    page.wait_for_url("**/jobs/approve/*/")
    page.select_option("#id_sync_mode", "bsp")
    steps = int(page.input_value("#id_steps"))
    page.fill("#id_steps", str(steps * 500))  # long enough to cancel while it runs
    page.fill("#id_batch_size", "64")
    shoot(page, "approve")
    page.click("#approve-options button[type=submit]")
    page.wait_for_url("**/jobs/*/")
    job_url = page.url

    # Live metrics arrive over the websocket: the step counter and the charts move.
    page.wait_for_selector("[data-field=live].on", timeout=20_000)
    page.wait_for_function(
        "() => parseInt(document.querySelector('[data-field=step]').textContent) > 0",
        timeout=120_000)
    page.wait_for_selector("#chart-throughput .scatterlayer .point")
    charts = page.locator("#chart-throughput").inner_text()
    assert "throughput (samples/s)" in charts and "elapsed (s)" in charts
    assert "plan estimate" in charts
    assert "$" in page.locator("[data-field=cost]").locator("..").inner_text()
    shoot(page, "job-running")

    page.goto(f"{url}/")
    page.wait_for_selector(f"#running-jobs a[href='{job_url[len(url):]}']")
    shoot(page, "dashboard")

    page.goto(job_url)
    page.click("#job button:has-text('Cancel')")
    page.wait_for_function(
        "() => document.querySelector('[data-field=status]').textContent.trim() === 'cancelled'",
        timeout=30_000)
    page.wait_for_selector("#job button:has-text('Restart')")  # after the page's reload
    assert "run cancelled at step" in page.locator("#log").inner_text()
    shoot(page, "job-cancelled")
    page.goto(f"{url}/costs/")
    assert "Ranking models" in page.locator("table").inner_text()
    shoot(page, "costs")

    # The permission boundary: another user sees none of it.
    page.context.clear_cookies()
    _log_in(page, url, "eve", "outsider-1984")
    assert "Ranking models" not in page.content()
    response = page.goto(job_url)
    assert response is not None and response.status == 404
    api = page.request.get(f"{url}/api/jobs/?format=json")
    assert api.status == 200 and api.json()["results"] == []
    response = page.goto(f"{url}/planning/project/{project.pk}/")
    assert response is not None and response.status == 404
