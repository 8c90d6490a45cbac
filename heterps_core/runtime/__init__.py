"""The runtime: executes a plan with real processes (stage replicas + parameter server).

Entry points: `compile_run(RunConfig(...))` to validate a run (nothing started),
`launch(RunConfig(...), sink, cancel)` for a whole run, `Launcher` for start/wait/pids,
`run_agent` (in `agent`) on worker machines. See docs/runtime.md.

The names that need torch (the launcher, the compile step, the metrics) load on first use,
so torch-free parts (`binding`, `errors`, `spec`) can check a run's input before torch is
imported: `heterps run` refuses bad input in well under a second (docs/runtime.md, Start-up).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from heterps_core.runtime.binding import Target, parse_binding, parse_target
from heterps_core.runtime.errors import RunCancelled, RunConfigError, RunError, RunPreempted
from heterps_core.runtime.spec import TrainSettings

if TYPE_CHECKING:
    from heterps_core.runtime.compile import RunConfig, compile_run
    from heterps_core.runtime.launcher import Launcher, launch
    from heterps_core.runtime.metrics import (
        MetricsSample,
        MetricsSink,
        StageMetrics,
        progress_sink,
    )
    from heterps_core.runtime.result import RunResult

_LAZY = {
    "RunConfig": "compile",
    "compile_run": "compile",
    "Launcher": "launcher",
    "launch": "launcher",
    "MetricsSample": "metrics",
    "MetricsSink": "metrics",
    "StageMetrics": "metrics",
    "progress_sink": "metrics",
    "RunResult": "result",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Launcher",
    "MetricsSample",
    "MetricsSink",
    "RunCancelled",
    "RunConfig",
    "RunConfigError",
    "RunError",
    "RunPreempted",
    "RunResult",
    "StageMetrics",
    "Target",
    "TrainSettings",
    "compile_run",
    "launch",
    "parse_binding",
    "parse_target",
    "progress_sink",
]
