"""The health checks. Each returns (ok, detail); none may hang longer than its timeout."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import channel_layers, get_channel_layer
from django.conf import settings
from django.db import connection

from webapp.background import broker as celery_door

TIMEOUT_S = 3.0
Check = Callable[[], str]


def database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return connection.vendor


def channel_layer() -> str:
    if get_channel_layer() is None:
        raise RuntimeError("no channel layer configured")
    return async_to_sync(_round_trip)()


async def _round_trip() -> str:
    # A layer of its own: the server's shared layer is receiving in Daphne's event loop for
    # every open websocket, and channels-redis serves one loop's receive() at a time, so a
    # round trip through it from this thread's loop timed out (503 with a websocket open).
    layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
    try:
        channel = await layer.new_channel("healthz.")
        token = uuid.uuid4().hex
        await asyncio.wait_for(layer.send(channel, {"type": "healthz", "token": token}),
                               TIMEOUT_S)
        message = await asyncio.wait_for(layer.receive(channel), TIMEOUT_S)
        if message.get("token") != token:
            raise RuntimeError("channel layer returned someone else's message")
        return type(layer).__name__
    finally:
        close = getattr(layer, "close_pools", None)
        if close is not None:
            await close()


def broker() -> str:
    app = celery_door.app()
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=TIMEOUT_S)
        return str(conn.transport_cls)


CHECKS: dict[str, Check] = {
    "database": database,
    "channel_layer": channel_layer,
    "broker": broker,
}


def report() -> dict[str, Any]:
    """{"status": "ok"|"fail", "mode": ..., "checks": {name: {ok, detail, ms}}}."""
    checks = {name: _run(check) for name, check in CHECKS.items()}
    ok = all(c["ok"] for c in checks.values())
    return {"status": "ok" if ok else "fail", "mode": settings.MODE.name, "checks": checks}


def _run(check: Check) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        detail, ok = check(), True
    except Exception as exc:  # a health check reports failures, it does not raise them
        detail, ok = f"{type(exc).__name__}: {exc}", False
    return {"ok": ok, "detail": detail, "ms": round((time.perf_counter() - start) * 1000, 1)}
