"""Demo data for a fresh installation: one small loader class per kind of data, one registry.

`manage.py up` (and `manage.py load_demo`) run every loader against the "Demo" project.
Loaders must be idempotent: they run on every start. Adding one: a `DemoLoader` subclass
with `@register`, and its module in `LOADER_MODULES`.
"""

from __future__ import annotations

import importlib
from typing import ClassVar

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from webapp.projects.models import Membership, Project, Role

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


@transaction.atomic
def load_demo(owner: AbstractBaseUser) -> dict[str, int]:
    """Ensure the Demo project exists with `owner` as an owner and run every loader."""
    for module in LOADER_MODULES:
        importlib.import_module(module)
    project = Project.objects.filter(name=DEMO_PROJECT).order_by("id").first()
    if project is None:
        project = Project.objects.create(
            name=DEMO_PROJECT, description="Sample resource catalogue and models."
        )
    Membership.objects.get_or_create(project=project, user=owner, defaults={"role": Role.OWNER})
    return {loader.name: loader().load(project) for loader in _LOADERS}
