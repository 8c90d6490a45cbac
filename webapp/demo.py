"""Demo data for a fresh installation: one small loader class per kind of data, one registry.

`manage.py up` (and `manage.py load_demo`) run every loader against the "Demo" project
(`webapp/ops/demo.py`), each ONCE per installation: a `DemoLoaded` marker records it, so
rows a user deleted (or the whole Demo project) are never created again. In production
mode `up` loads nothing unless asked (`--demo` or HETERPS_DEMO=1). Adding a loader: a
`DemoLoader` subclass with `@register`, and its module in `LOADER_MODULES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from heterps_core.registry import Registry
from webapp.projects.models import Project

DEMO_PROJECT = "Demo"
LOADER_MODULES = [
    "webapp.catalogue.demo",
    "webapp.modelzoo.demo",
    "webapp.planning.demo",
]


class DemoLoader:
    name: ClassVar[str]

    def load(self, project: Project) -> int:
        """Create what is missing; return how many rows were created."""
        raise NotImplementedError


# A registry of classes, in registration order (the order they load in).
LOADERS: Registry[type[DemoLoader]] = Registry("demo loader", ordered=True)


def register(cls: type[DemoLoader]) -> type[DemoLoader]:
    return LOADERS.register(cls)


def demo_wanted(mode: str, env: Mapping[str, str], asked: bool | None = None) -> bool:
    """Whether `manage.py up` loads demo data: what the command line asked for, else
    HETERPS_DEMO, else only in the embedded default (never in production by surprise)."""
    if asked is not None:
        return asked
    if env.get("HETERPS_DEMO", "") != "":
        return env["HETERPS_DEMO"].strip().lower() in ("1", "true", "yes", "on")
    return mode == "embedded"
