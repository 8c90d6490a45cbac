"""A person opens the site, is sent to the login page, logs in and sees the dashboard."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_in_a_real_browser(page: Any, live_server: Any, django_user_model: Any) -> None:
    from webapp.projects.services import create_project

    ada = django_user_model.objects.create_user("ada", password="lovelace-1843")
    create_project(ada, "Ranking models")

    page.goto(f"{live_server.url}/")
    assert page.url.startswith(f"{live_server.url}/login/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "wrong-password")
    page.click("button[type=submit]")
    assert page.get_by_role("alert").inner_text().startswith("Your username and password")

    page.fill("#id_username", "ada")
    page.fill("#id_password", "lovelace-1843")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    assert page.get_by_role("heading", name="Dashboard").is_visible()
    assert page.get_by_role("link", name="Ranking models").is_visible()
    assert page.locator(".who").inner_text() == "ada"
    # Static files come from our server (WhiteNoise): the stylesheet applied.
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(244, 246, 249)"
