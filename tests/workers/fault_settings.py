"""Settings of the fault tests' worker and server subprocesses: the project's, plus the
fault-test work kinds (fault_kind)."""

from webapp.settings import *  # noqa: F403
from webapp.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "fault_kind.FaultKindConfig"]
