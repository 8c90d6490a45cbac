"""A work kind that ignores every stop signal (a kind stuck in a long call that never polls
`ctx.cancelled()`): what the embedded server's shutdown must not wait for past its bound.

Registered in server subprocesses through `shutdown_settings` (DJANGO_SETTINGS_MODULE)."""

from __future__ import annotations

import time
from typing import Any

from django.apps import AppConfig

from heterps_core.progress import Progress
from webapp.background import kinds
from webapp.background.context import WorkContext


class StubbornKindConfig(AppConfig):
    name = "stubborn_kind"
    label = "stubborn_kind"


class Stubborn(kinds.WorkKind):
    name = "stubborn"
    label = "Sleep through every stop signal (shutdown tests)"
    queue = kinds.LONG
    params_schema = {"type": "object", "properties": {
        "seconds": {"type": "number", "minimum": 0, "maximum": 3600}}}

    def clean_params(self, params: Any) -> dict[str, Any]:
        return {"seconds": float(params.get("seconds", 60))}

    def run(self, ctx: WorkContext) -> dict[str, Any]:
        ctx.progress(Progress(1, 2, "asleep"))
        time.sleep(ctx.params["seconds"])  # deaf to ctx.stop on purpose
        return {}


if Stubborn.name not in kinds.names():
    kinds.register(Stubborn)
