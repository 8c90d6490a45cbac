"""Issue 17 item 6: static files hashed, compressed and cached for good once collected;
never a stale manifest (pages would link yesterday's scripts); plain names before any
collection (a fresh clone's tests)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django.utils.functional import empty


@pytest.fixture(scope="module")
def collected_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One collection for the module: compressing the bundle takes seconds."""
    root = tmp_path_factory.mktemp("static")
    with override_settings(STATIC_ROOT=root):
        call_command("collectstatic", interactive=False, verbosity=0)
    return root


@pytest.fixture
def collected(collected_root: Path, settings: Any) -> Path:
    settings.STATIC_ROOT = collected_root  # resets the storage (Django's setting_changed)
    return collected_root


def test_collected_names_are_hashed_and_compressed(collected: Path) -> None:
    from django.templatetags.static import static

    url = static("vendor/plotly-basic.min.js")
    assert url.startswith("/static/vendor/plotly-basic.min.") and url != \
        "/static/vendor/plotly-basic.min.js"
    hashed = collected / url.removeprefix("/static/")
    gz = Path(f"{hashed}.gz")
    assert gz.exists() and gz.stat().st_size < 0.4 * hashed.stat().st_size
    assert hashed.stat().st_size < 1_500_000  # the basic bundle, not the 4.8 MB full one


def test_a_stale_manifest_is_not_used(collected: Path, settings: Any, tmp_path: Path) -> None:
    from django.contrib.staticfiles.storage import staticfiles_storage
    from django.templatetags.static import static

    manifest = collected / "staticfiles.json"
    # Older than the newest source file (a checkout's files can be hours old, so not
    # "an hour ago"): a source file is newer than the collection.
    sources = Path(str(settings.STATICFILES_DIRS[0]))
    newest = max(p.stat().st_mtime for p in sources.rglob("*") if p.is_file())
    past = newest - 60
    kept = manifest.stat().st_mtime
    os.utime(manifest, (past, past))
    staticfiles_storage._wrapped = empty
    try:
        assert static("js/charts.js") == "/static/js/charts.js"
    finally:
        os.utime(manifest, (kept, kept))
        staticfiles_storage._wrapped = empty


def test_uncollected_pages_link_plain_names(settings: Any, tmp_path: Path) -> None:
    from django.templatetags.static import static

    settings.STATIC_ROOT = tmp_path / "empty"
    assert static("vendor/plotly-basic.min.js") == "/static/vendor/plotly-basic.min.js"


@pytest.mark.django_db
def test_whitenoise_serves_the_collected_bundle_gzipped_and_immutable(
    collected: Path, settings: Any,
) -> None:
    from django.templatetags.static import static

    url = static("vendor/plotly-basic.min.js")
    response = Client().get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200
    assert response.headers["Content-Encoding"] == "gzip"
    assert "immutable" in response.headers["Cache-Control"]
