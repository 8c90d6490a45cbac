"""Playwright with the system Chromium (Debian's `chromium`; no browser download).
A failed test leaves a screenshot under test-artifacts/."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update"]


@pytest.fixture(autouse=True)
def plain_static_names(settings: Any) -> None:
    """Pages link `static/` names: pytest-django's live server serves static files from the
    finders, which know no hashed names a `collectstatic` run may have left in staticfiles/
    (that path is tested in tests/webapp/test_static.py)."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(autouse=True)
def job_logs_in_tmp(settings: Any, tmp_path: Any) -> None:
    """Runs write logs and checkpoints under VAR_DIR/jobs/<id>: a fresh test database
    numbers its jobs from 1 again, so each test gets its own folder."""
    settings.VAR_DIR = tmp_path


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Per test, so Playwright's event loop is gone before pytest-django flushes the
    database; while it runs, Django must be told that ORM calls from this thread are fine."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("no system Chromium: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest, settings: Any) -> Iterator[Any]:
    if settings.SECURE_SSL_REDIRECT:
        # The live server speaks plain http and builds its middleware once per session.
        pytest.fail("browser tests need HETERPS_SECURE=0 in production mode (.ci/run sets it)")
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


@pytest.fixture(scope="session")
def _daphne() -> str:
    """Daphne serving the real ASGI app (HTTP + websockets) from a thread of this process,
    so it shares the test database and the embedded channel layer with the worker. Started
    once per session: Twisted's reactor cannot be started again once stopped, so a second
    test that stopped and restarted it got a half-working server (seen in CI). The thread
    is a daemon and ends with the process."""
    from daphne.server import Server

    from webapp.asgi import application

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = Server(application, endpoints=[f"tcp:port={port}:interface=127.0.0.1"],
                    signal_handlers=False, verbosity=0)
    threading.Thread(target=server.run, daemon=True, name="daphne").start()
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "daphne did not start"
            time.sleep(0.1)
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def asgi_url(live_server: Any, _daphne: str) -> str:
    """The session's Daphne. (`live_server` is requested for its database set-up: it lets
    other threads in.)"""
    return _daphne


@pytest.fixture
def worker() -> Iterator[Any]:
    """The embedded Celery worker, as `manage.py up` runs it, for pages that start work."""
    from workers import embedded
    from workers.app import app

    # Messages an earlier test process left on the broker (PostgreSQL + Redis mode) name
    # work ids that a fresh test database reuses: they must not run before this test's own.
    with app.connection_for_write() as connection:
        for queue in embedded.QUEUES:
            connection.default_channel.queue_purge(queue)
    started = embedded.start(concurrency=2)
    yield started
    started.stop()


def reload(page: Any) -> None:
    """Reload, unless the page is reloading itself (a work page does when its websocket says
    the work finished): the test's reload is then aborted, and the page's own one counts."""
    from playwright.sync_api import Error

    try:
        page.reload()
    except Error:  # "net::ERR_ABORTED; maybe frame was detached?": the page's own won
        page.wait_for_load_state()


def wait_for_selector(page: Any, selector: str, timeout_s: float = 120) -> None:
    """Wait until `selector` shows. Work pages reload themselves when their websocket says
    the work finished; reloading here too covers a missed event (the two may race) and a
    live server without websockets."""

    deadline = time.monotonic() + timeout_s
    while page.locator(selector).count() == 0:
        assert time.monotonic() < deadline, f"{selector} did not appear on {page.url}"
        page.wait_for_timeout(1000)
        if page.locator(selector).count() == 0:
            reload(page)


@pytest.fixture
def reloaded() -> Any:
    """`reloaded(page)`: reload, or let the page's own reload count (`reload`)."""
    return reload


@pytest.fixture
def until() -> Any:
    """`until(page, selector)`: wait (reloading) until work results show on the page."""
    return wait_for_selector


def plan_with(page: Any, schedulers: list[str]) -> Any:
    """Tick exactly `schedulers` on the filled plan form, submit it, wait for the comparison
    of their plans and return its one chosen row."""
    for box in page.locator("#plan-form input[name=schedulers]").all():
        box.set_checked(box.get_attribute("value") in schedulers)
    page.click("#plan-form button[type=submit]")
    page.wait_for_url("**/planning/*/")
    wait_for_selector(page, "#comparison")
    rows = page.locator("#comparison tbody tr")
    assert sorted(r.get_attribute("data-scheduler") for r in rows.all()) == sorted(schedulers)
    chosen = page.locator("#comparison tr.chosen")
    assert chosen.count() == 1
    return chosen


@pytest.fixture
def compare() -> Any:
    """`compare(page, schedulers)`: run the plan form with these schedulers (`plan_with`)."""
    return plan_with


PHONE = {"width": 390, "height": 844}


@pytest.fixture
def shoot(browser: Any, request: pytest.FixtureRequest) -> Any:
    """`shoot(page, name)`: full-page screenshots at desktop width and at 390 px (the same
    page, with the same session, in a phone-sized context) into the test module's `SHOTS`
    folder, for people to look at; the phone page must not scroll sideways (wide tables
    scroll inside their own box)."""
    folder: Path = request.module.SHOTS

    def _shoot(page: Any, name: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"{name}-1280.png"), full_page=True)
        phone = browser.new_context(viewport=PHONE, storage_state=page.context.storage_state())
        try:
            small = phone.new_page()
            small.goto(page.url)
            small.wait_for_load_state("networkidle")
            small.wait_for_timeout(800)  # charts draw after the data arrives
            small.screenshot(path=str(folder / f"{name}-390.png"), full_page=True)
            overflow = small.evaluate(
                "document.documentElement.scrollWidth - window.innerWidth")
        finally:
            phone.close()
        assert overflow <= 0, f"{name} scrolls sideways on a phone by {overflow} px"

    return _shoot


@pytest.fixture
def sign_in() -> Any:
    """`sign_in(page, user, base_url)`: the page's browser context carries a session of
    `user` (a fresh Django test client signs in: no password hashing, no sign-in throttle;
    a shared one would flush the session it signed in before)."""

    def _sign_in(page: Any, user: Any, base_url: str) -> None:
        from urllib.parse import urlsplit

        from django.test import Client

        client = Client()
        client.force_login(user)
        cookie = client.cookies["sessionid"]
        page.context.add_cookies([{"name": "sessionid", "value": cookie.value,
                                   "domain": urlsplit(base_url).hostname, "path": "/"}])

    return _sign_in
