"""Demo data for a fresh installation: one small loader class per kind of data, one registry.

`manage.py up` (and `manage.py load_demo`) run every loader against the "Demo" project,
each ONCE per installation: a `DemoLoaded` marker records it, so rows a user deleted (or
the whole Demo project) are never created again. In production mode `up` loads nothing
unless asked (`--demo` or HETERPS_DEMO=1). Adding a loader: a `DemoLoader` subclass with
`@register`, and its module in `LOADER_MODULES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from django.db import transaction

from webapp.projects.models import Membership, Project, Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User

DEMO_PROJECT = "Demo"
LOADER_MODULES = [
    "webapp.catalogue.demo",
    "webapp.modelzoo.demo",
    "webapp.planning.demo",
]
_LOADERS: list[type[DemoLoader]] = []


class DemoLoader:
    name: ClassVar[str]

    def load(self, project: Project) -> int:
        """Create what is missing; return how many rows were created."""
        raise NotImplementedError


def register(cls: type[DemoLoader]) -> type[DemoLoader]:
    if cls not in _LOADERS:
        _LOADERS.append(cls)
    return cls


def demo_wanted(mode: str, env: Mapping[str, str], asked: bool | None = None) -> bool:
    """Whether `manage.py up` loads demo data: what the command line asked for, else
    HETERPS_DEMO, else only in the embedded default (never in production by surprise)."""
    if asked is not None:
        return asked
    if env.get("HETERPS_DEMO", "") != "":
        return env["HETERPS_DEMO"].strip().lower() in ("1", "true", "yes", "on")
    return mode == "embedded"


@transaction.atomic
def load_demo(owner: User, force: bool = False) -> dict[str, int]:
    """Run every loader not run before (all of them with `force`) against the Demo project,
    with `owner` as an owner; the rows each created, 0 for those already loaded."""
    from webapp.ops.models import DemoLoaded

    for module in LOADER_MODULES:
        importlib.import_module(module)
    done = set(DemoLoaded.objects.values_list("loader", flat=True))
    pending = [loader for loader in _LOADERS if force or loader.name not in done]
    if not pending:
        return {loader.name: 0 for loader in _LOADERS}
    project = Project.objects.filter(name=DEMO_PROJECT).order_by("id").first()
    if project is None:
        project = Project.objects.create(
            name=DEMO_PROJECT, description="Sample resource catalogue and models."
        )
    Membership.objects.get_or_create(project=project, user=owner, defaults={"role": Role.OWNER})
    created = {loader.name: 0 for loader in _LOADERS}
    for loader in pending:
        created[loader.name] = loader().load(project)
        DemoLoaded.objects.update_or_create(loader=loader.name,
                                            defaults={"rows": created[loader.name]})
    return created


def already_loaded() -> bool:
    from webapp.ops.models import DemoLoaded

    for module in LOADER_MODULES:
        importlib.import_module(module)
    done = set(DemoLoaded.objects.values_list("loader", flat=True))
    return all(loader.name in done for loader in _LOADERS)
