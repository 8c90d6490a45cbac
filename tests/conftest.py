"""Shared fixtures: personas (owner, member, viewer, outsider) around one project, logged-in
clients, and the services behind the production mode (found through DATABASE_URL /
REDIS_URL, or on their default local ports).

Core tests run here too; they need none of these fixtures.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"
LOCAL_REDIS = "redis://127.0.0.1:6379/0"
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def service_url(variable: str, local: str, port: int) -> str | None:
    """The URL from the environment, else the local default if something listens there."""
    if os.environ.get(variable):
        return os.environ[variable]
    return local if _answers("127.0.0.1", port) else None


def pytest_configure(config: pytest.Config) -> None:
    _own_var_dir_per_xdist_worker()


def _own_var_dir_per_xdist_worker() -> None:
    # Under pytest-xdist (`make test-fast`) every worker is a process of its own: give each
    # its own var dir, so workers never share a SQLite file, a job's run folder or its log
    # (pytest-django's _gwN suffix alone would leave the run folders shared). Settings are
    # loaded before any conftest, so this changes them in place, and the environment for
    # the processes the tests start.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    from django.conf import settings

    var_dir = Path(settings.VAR_DIR) / f"xdist-{worker}"
    var_dir.mkdir(parents=True, exist_ok=True)
    settings.VAR_DIR = var_dir
    os.environ["HETERPS_VAR_DIR"] = str(var_dir)
    for database in settings.DATABASES.values():
        if database["ENGINE"] == "django.db.backends.sqlite3":
            database["NAME"] = str(var_dir / Path(database["NAME"]).name)
            database["TEST"]["NAME"] = str(var_dir / Path(database["TEST"]["NAME"]).name)


def pytest_report_header() -> str:
    # The first lines of every run (and of the CI log) say which services the tests use.
    from webapp.environment import mode

    return mode(os.environ).describe()


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = service_url("REDIS_URL", LOCAL_REDIS, 6379)
    if url is None:
        pytest.skip("no Redis: set REDIS_URL or start redis on 127.0.0.1:6379")
    return url


@pytest.fixture(scope="session")
def postgres_url() -> str:
    url = service_url("DATABASE_URL", LOCAL_POSTGRES, 5432)
    if url is None:
        pytest.skip("no PostgreSQL: set DATABASE_URL or start it on 127.0.0.1:5432")
    return url


@dataclass
class Personas:
    project: Any
    owner: Any
    member: Any
    viewer: Any
    outsider: Any


@pytest.fixture
def personas(django_user_model: Any) -> Personas:
    from webapp.projects.models import Membership, Role
    from webapp.projects.services import create_project

    users = {
        # No password: hashing one costs ~0.5 s; tests log in with force_login.
        name: django_user_model.objects.create_user(name)
        for name in ("owner", "member", "viewer", "outsider")
    }
    project = create_project(users["owner"], "Alpha")
    Membership.objects.create(project=project, user=users["member"], role=Role.MEMBER)
    Membership.objects.create(project=project, user=users["viewer"], role=Role.VIEWER)
    return Personas(project=project, **users)


@pytest.fixture
def login(client: Any) -> Any:
    """login(user) -> the test client, logged in as that user."""

    def _login(user: Any) -> Any:
        client.force_login(user)
        return client

    return _login


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    # Browser fixtures read this to keep a screenshot of a failed test.
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


def live_processes_mentioning(text: str) -> list[int]:
    """Pids of running (not zombie) processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="session")
def live_processes() -> Callable[[str], list[int]]:
    """`live_processes(text)`: what a multi-process test leaves running (should be nothing)."""
    return live_processes_mentioning
