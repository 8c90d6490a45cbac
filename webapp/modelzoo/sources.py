"""Where a registered model comes from; the code loader decides by it, so it sits below both
the model and the loader."""

from __future__ import annotations

from django.db import models


class Source(models.TextChoices):
    ZOO = "zoo", "Zoo"
    FACTORY = "factory", "Own model (factory)"
    IMPORTED = "imported", "Imported layer chain"
