"""What uses a resource type while it runs, asked before a type is renamed or deleted.

Jobs sit above the catalogue (they run on its types), so the catalogue cannot import them;
the jobs app registers its check here when it loads (`JobsConfig.ready`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webapp.catalogue.models import ResourceType

# Each check: the ids of running jobs that use the type.
RUNNING_USERS: list[Callable[[ResourceType], list[int]]] = []


def register(check: Callable[[ResourceType], list[int]]) -> None:
    if check not in RUNNING_USERS:
        RUNNING_USERS.append(check)
