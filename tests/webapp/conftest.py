from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.db import connections


@pytest.fixture(autouse=True)
def plain_http(settings: Any) -> None:
    # Production mode (CI sets DATABASE_URL) redirects to https; the test client speaks http.
    settings.SECURE_SSL_REDIRECT = False


@pytest.fixture(autouse=True, scope="session")
def close_async_orm_connections(django_db_setup: None) -> Iterator[None]:
    # Django's async ORM (acreate, aforce_login) runs in asgiref's one sync thread and leaves
    # its connection open; PostgreSQL refuses to drop a test database with open sessions.
    yield
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
