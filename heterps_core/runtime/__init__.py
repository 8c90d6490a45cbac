"""The runtime: executes a plan with real processes (stage replicas + parameter server).

Entry points: `launch(RunConfig(...), sink, cancel)` for a whole run, `Launcher` for
start/wait/pids, `run_agent` (in `agent`) on worker machines. See docs/runtime.md.
"""

from heterps_core.runtime.binding import Target, parse_binding, parse_target
from heterps_core.runtime.errors import RunCancelled, RunConfigError, RunError
from heterps_core.runtime.launcher import Launcher, RunConfig, RunResult, launch
from heterps_core.runtime.metrics import MetricsSample, MetricsSink, StageMetrics, progress_sink
from heterps_core.runtime.spec import TrainSettings

__all__ = [
    "Launcher",
    "MetricsSample",
    "MetricsSink",
    "RunCancelled",
    "RunConfig",
    "RunConfigError",
    "RunError",
    "RunResult",
    "StageMetrics",
    "Target",
    "TrainSettings",
    "launch",
    "parse_binding",
    "parse_target",
    "progress_sink",
]
