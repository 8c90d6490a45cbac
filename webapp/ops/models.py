"""The marker that demo data was loaded: each loader runs once per installation, so rows a
user deleted are never created again."""

from __future__ import annotations

from django.db import models


class DemoLoaded(models.Model):
    loader = models.CharField(max_length=80, unique=True)
    rows = models.PositiveIntegerField(default=0)
    loaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "demo data loaded"
        verbose_name_plural = "demo data loaded"

    def __str__(self) -> str:
        return f"demo {self.loader}: {self.rows} rows at {self.loaded_at:%Y-%m-%d %H:%M}"
