"""The runtime: executes a plan with real processes (stage replicas + parameter server).

Entry points: `compile_run(RunConfig(...))` to validate a run (nothing started),
`launch(RunConfig(...), sink, cancel)` for a whole run, `Launcher` for start/wait/pids,
`run_agent` (in `agent`) on worker machines. See docs/runtime.md.
"""

from heterps_core.runtime.binding import Target, parse_binding, parse_target
from heterps_core.runtime.compile import RunConfig, compile_run
from heterps_core.runtime.errors import RunCancelled, RunConfigError, RunError, RunPreempted
from heterps_core.runtime.launcher import Launcher, launch
from heterps_core.runtime.metrics import MetricsSample, MetricsSink, StageMetrics, progress_sink
from heterps_core.runtime.result import RunResult
from heterps_core.runtime.spec import TrainSettings

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
