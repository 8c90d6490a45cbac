from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections


@pytest.fixture(autouse=True)
def plain_http(settings: Any) -> None:
    # Production mode (CI sets DATABASE_URL) redirects to https; the test client speaks http.
    settings.SECURE_SSL_REDIRECT = False


@pytest.fixture(autouse=True, scope="session")
def end_stray_test_database_sessions(
    django_db_setup: None, django_db_blocker: Any
) -> Iterator[None]:
    # Django's async ORM (acreate, aforce_login) leaves connections open in asgiref's
    # worker thread, out of reach of this one; PostgreSQL will not drop a test database
    # that still has sessions, so end them before pytest-django drops it.
    yield
    connection = connections["default"]
    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
