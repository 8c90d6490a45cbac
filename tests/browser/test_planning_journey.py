"""My part of the journey in a real browser: log in, pick a zoo model, profile it, make a
cluster, plan with exact + rl + greedy, compare, open the chosen plan, ask a what-if, train
the RL policy. Runs on the embedded default and, with DATABASE_URL/REDIS_URL, on PostgreSQL +
Redis (the worker is started in-process either way). Screenshots of every page at 1280 px and
390 px land in test-artifacts/planning/ for people to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "planning"


def test_profile_plan_and_compare_in_a_browser(
    page: Any, browser: Any, shoot: Any, live_server: Any, django_user_model: Any, worker: Any,
    until: Any, compare: Any,
) -> None:
    from heterps_core import schedulers
    from webapp.catalogue.demo import CatalogueDemo
    from webapp.projects.services import create_project

    ada = django_user_model.objects.create_user("ada", password="lovelace-1843")
    project = create_project(ada, "Ranking models")
    CatalogueDemo().load(project)
    wanted = [n for n in ("exact", "rl", "greedy") if n in schedulers.names()]
    url = live_server.url

    page.goto(f"{url}/models/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "lovelace-1843")
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/models/project/{project.pk}/")
    shoot(page, "models-list")

    page.select_option("#id_zoo_name", "ctr_dnn")
    page.select_option("#id_size", "tiny")
    page.click("#add-zoo button[type=submit]")
    page.wait_for_url("**/models/*/")
    assert page.get_by_role("heading", name="ctr_dnn-tiny").is_visible()
    page.fill("#profile-form #id_batch_size", "64")
    page.fill("#profile-form #id_repeats", "1")
    page.click("#profile-form button[type=submit]")
    page.wait_for_url("**/profiling/*/")
    until(page, "table.layers")
    assert "this machine" in page.locator("table.layers thead").inner_text()
    page.wait_for_selector("#layer-chart .main-svg")
    assert "time per batch (ms, log scale)" in page.locator("#layer-chart").inner_text()
    shoot(page, "profile-run")

    page.click("text=Plan this model")
    page.wait_for_url(f"**/planning/project/{project.pk}/**")
    page.fill("#cluster-form #id_name", "All types")
    for box in page.locator("#cluster-form input[type=checkbox]").all():
        box.check()
    page.click("#cluster-form button[type=submit]")
    page.wait_for_url(f"{url}/planning/project/{project.pk}/")
    page.select_option("#plan-form #id_model", label="ctr_dnn-tiny")
    page.select_option("#plan-form #id_cluster", label="All types")
    shoot(page, "planning-form")
    page.fill("#plan-form #id_throughput_target", "50000")
    page.fill("#plan-form #id_batch_size", "999")
    page.click("#plan-form button[type=submit]")
    assert "no profile of ctr_dnn-tiny at batch size 999; profiled at 64" in (
        page.locator("#plan-form").inner_text())
    page.fill("#plan-form #id_batch_size", "")
    page.fill("#plan-form #id_samples", "1000000000")
    page.fill("#plan-form #id_budget_s", "1")
    chosen = compare(page, wanted)
    assert "chosen" in chosen.inner_text()
    assert "$" in chosen.inner_text() and "/h" in chosen.inner_text()
    page.wait_for_selector("#scatter .main-svg")
    scatter = page.locator("#scatter").inner_text()
    assert "throughput (samples/s)" in scatter and "cost ($ per hour, estimate)" in scatter
    assert page.locator(".stages").count() == len(wanted)
    shoot(page, "planning-compare")

    page.click("#comparison a >> text=exact")
    page.wait_for_url("**/planning/result/*/")
    assert "Binding stage:" in page.locator("text=Binding stage:").inner_text()
    resource = page.locator("#stages tbody tr td").nth(2).inner_text()
    page.select_option("#what-if-form #id_resource", resource)
    page.fill("#what-if-form #id_price_per_hour", "500")
    page.click("#what-if-form button[type=submit]")
    answer = page.locator("#what-if-answer").inner_text()
    assert answer.startswith(f"{resource}: price_per_hour")
    shoot(page, "plan-detail")

    page.go_back()
    page.go_back()
    page.wait_for_selector("#rl-form")
    page.fill("#rl-form #id_budget_s", "2")
    page.fill("#rl-form #id_max_updates", "40")
    page.fill("#rl-form #id_samples", "16")
    page.click("#rl-form button[type=submit]")
    page.wait_for_url("**/rl/*/")
    until(page, "text=Best plan found")
    page.wait_for_selector("#reward-chart .main-svg")
    assert "policy update (count)" in page.locator("#reward-chart").inner_text()
    shoot(page, "rl-training")
