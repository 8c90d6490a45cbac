"""Work kinds for the fault tests: count steps slowly, reporting progress after each.

`fault-steps` is like a job run (never started over after a lost worker); `fault-steps-
retryable` is like a plan (starts over). Each step's metrics carry the pid of the process
running it, so a test knows which process to kill. With `children`, the kind also runs that
many child processes (as the runtime does) and stops them when told to stop.

Registered in the test process by importing this module, and in worker and server
subprocesses through `fault_settings` (DJANGO_SETTINGS_MODULE) and FaultKindConfig.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from django.apps import AppConfig
from django.core.exceptions import ValidationError

from heterps_core.progress import Progress
from webapp.background import kinds
from webapp.background.context import WorkCancelled, WorkContext


class FaultKindConfig(AppConfig):
    name = "fault_kind"
    label = "fault_kind"


class FaultSteps(kinds.WorkKind):
    name = "fault-steps"
    label = "Count steps (fault tests)"
    queue = kinds.LONG
    params_schema = {"type": "object", "properties": {
        "steps": {"type": "integer", "minimum": 0, "maximum": 10_000},
        "step_s": {"type": "number", "minimum": 0, "maximum": 60},
        "children": {"type": "integer", "minimum": 0, "maximum": 8}}}

    def clean_params(self, params: Any) -> dict[str, Any]:
        # A kind like any other: the API's fuzz test sends it what the schema allows.
        given = {"steps": 10, "step_s": 0.2, "children": 0, **params}
        try:
            return {"steps": int(given["steps"]), "step_s": float(given["step_s"]),
                    "children": int(given["children"])}
        except (TypeError, ValueError, OverflowError):
            raise ValidationError({"params": "steps, step_s and children must be numbers"}) \
                from None

    def run(self, ctx: WorkContext) -> dict[str, Any]:
        steps, step_s = ctx.params["steps"], ctx.params["step_s"]
        children = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
                    for _ in range(ctx.params.get("children", 0))]
        try:
            for i in range(steps):
                if ctx.stop.wait(step_s):
                    raise WorkCancelled(ctx.stop_reason)
                ctx.progress(Progress(i + 1, steps, f"step {i + 1}",
                                      {"pid": os.getpid(), "children": [c.pid for c in children],
                                       "attempt": ctx.attempt}))
        finally:
            for child in children:
                child.terminate()
            deadline = time.monotonic() + 5
            for child in children:
                try:
                    child.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.kill()
        return {"steps": steps, "attempt": ctx.attempt, "pid": os.getpid()}


class FaultStepsRetryable(FaultSteps):
    name = "fault-steps-retryable"
    label = "Count steps, may start over (fault tests)"
    retryable = True


class FaultStepsInteractive(FaultSteps):
    name = "fault-steps-interactive"
    label = "Count steps quickly (fault tests)"
    queue = kinds.INTERACTIVE
    retryable = True


for _kind in (FaultSteps, FaultStepsRetryable, FaultStepsInteractive):
    if _kind.name not in kinds.names():
        kinds.register(_kind)
