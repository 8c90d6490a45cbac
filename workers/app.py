"""The Celery app. Its broker follows the Django settings (in-memory or Redis)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# Worker processes fork pool children: a database connection pool must not be shared
# across the fork, so workers connect per task (read when the settings load, i.e. only
# where this module is imported before them: `celery -A workers`).
os.environ.setdefault("HETERPS_DB_POOL", "0")

app = Celery("heterps")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Task modules register themselves on import; keep the list in one place.
app.conf.imports = ["workers.tasks", "workers.agents", "workers.lifecycle"]
