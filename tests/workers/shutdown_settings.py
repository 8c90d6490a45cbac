"""Settings of the shutdown tests' server subprocesses: the fault tests' (fault_settings),
plus a kind that ignores stop signals (stubborn_kind)."""

from fault_settings import *  # noqa: F403
from fault_settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "stubborn_kind.StubbornKindConfig"]
