"""Static files: hashed, compressed and cached for a year once `collectstatic` has run.

`manage.py up` and the Docker image run `collectstatic`, which writes `name.<hash>.ext` plus
`.gz` (and `.br` with the `brotli` package) copies into STATIC_ROOT; WhiteNoise serves those
with `Cache-Control: max-age=315360000, immutable` and the encoding the browser accepts.

Without a collected copy (a fresh clone running the tests), or when a file under static/
changed after the last collection, pages link the plain names, which WhiteNoise serves
straight from static/ (WHITENOISE_USE_FINDERS): always the current file, briefly cached.
A stale manifest is therefore never used: it would link yesterday's scripts.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from whitenoise.storage import CompressedManifestStaticFilesStorage

logger = logging.getLogger(__name__)


class StaticStorage(CompressedManifestStaticFilesStorage):
    manifest_strict = False

    def read_manifest(self) -> str | None:
        content = super().read_manifest()
        if content is not None and self._manifest_is_stale():
            logger.warning("static files changed since the last collectstatic; serving them "
                           "unhashed until `manage.py collectstatic` (or `manage.py up`) runs")
            return None
        return content

    def stored_name(self, name: str) -> str:
        if self.hash_key(name) not in self.hashed_files:
            return name  # not collected: the finders serve the plain name
        return str(super().stored_name(name))

    def _manifest_is_stale(self) -> bool:
        manifest = Path(self.path(self.manifest_name))
        if not manifest.exists():
            return False
        collected_at = manifest.stat().st_mtime
        for folder in settings.STATICFILES_DIRS:
            for source in Path(str(folder)).rglob("*"):
                if source.is_file() and source.stat().st_mtime > collected_at:
                    return True
        return False
