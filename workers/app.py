"""The Celery app. Its broker follows the Django settings (in-memory or Redis)."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.worker.consumer import Consumer as CeleryConsumer

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# Worker processes fork pool children: a database connection pool must not be shared
# across the fork, so workers connect per task (read when the settings load, i.e. only
# where this module is imported before them: `celery -A workers`).
os.environ.setdefault("HETERPS_DB_POOL", "0")


class Consumer(CeleryConsumer):
    """The worker's consumer without gossip, mingle and event heartbeats, whatever the
    command line says. After a Redis restart, restarting the Gossip step closes its
    broadcast channel on a connection that is already gone and raises `AttributeError:
    'NoneType' object has no attribute ...` (`hostname`, `connection_errors`: celery/kombu
    #582). A worker started without `--without-gossip` logged it on each of our Redis
    restarts (tests/workers/test_faults.py), and the reported worker died of it. Nothing
    here uses the three; remote control (`inspect`, which workers/agents.py uses to find
    machines) is a step of its own and stays on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.update(without_gossip=True, without_mingle=True, without_heartbeat=True)
        super().__init__(*args, **kwargs)


app = Celery("heterps")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.worker_consumer = "workers.app:Consumer"
# Task modules register themselves on import; keep the list in one place.
app.conf.imports = ["workers.tasks", "workers.agents", "workers.lifecycle"]
