"""The approve form as a first user meets it (issue 25.11): it starts at the sync mode the
plan's estimate assumes (not bsp, which its own help says misses that estimate), and a
viewer who opens an approve link gets a page that says why, with no traceback logged."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from webapp.jobs.inputs.pipeline import plan_sync_mode

pytestmark = pytest.mark.django_db


def _chosen_sync(page: str) -> list[str]:
    select = re.search(r'<select name="sync_mode"[^>]*>(.*?)</select>', page, re.S)
    assert select
    return re.findall(r'<option value="([^"]+)"[^>]*selected', select.group(1))


def test_the_form_starts_at_the_plans_sync_mode(login: Any, personas: Any,
                                                plan_result: Any) -> None:
    page = login(personas.member).get(f"/jobs/approve/{plan_result.pk}/").content.decode()
    assert _chosen_sync(page) == [plan_sync_mode(plan_result.plan)] == ["async"]


def test_a_v2_plan_names_its_own_mode() -> None:
    assert plan_sync_mode({"sync": "bsp", "cost_model": 2}) == "bsp"
    assert plan_sync_mode({"sync": "async", "cost_model": 2}) == "async"
    assert plan_sync_mode({"sync": "no-such-mode"}) == "async"


def test_a_viewer_gets_a_page_that_says_why_and_no_traceback(
    login: Any, personas: Any, plan_result: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        response = login(personas.viewer).get(f"/jobs/approve/{plan_result.pk}/")
        posted = login(personas.viewer).post(f"/jobs/approve/{plan_result.pk}/",
                                             {"steps": "8"})
    assert response.status_code == 403 and posted.status_code == 403
    page = response.content.decode()
    assert "viewers see plans and jobs but cannot approve a plan" in page
    assert f"/planning/result/{plan_result.pk}/" in page and "<nav" in page  # not bare
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    assert login(personas.outsider).get(f"/jobs/approve/{plan_result.pk}/").status_code == 404
