from typing import Any

import pytest


@pytest.fixture(autouse=True)
def plain_http(settings: Any) -> None:
    # Production mode (CI sets DATABASE_URL) redirects to https; the test client speaks http.
    settings.SECURE_SSL_REDIRECT = False
