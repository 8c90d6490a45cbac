"""Loading the demo data: every registered `webapp.demo.DemoLoader`, each once per
installation (a `DemoLoaded` marker row records it)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from django.db import transaction

from webapp.demo import DEMO_PROJECT, LOADER_MODULES, LOADERS
from webapp.ops.models import DemoLoaded
from webapp.projects.models import Membership, Project, Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@transaction.atomic
def load_demo(owner: User, force: bool = False) -> dict[str, int]:
    """Run every loader not run before (all of them with `force`) against the Demo project,
    with `owner` as an owner; the rows each created, 0 for those already loaded."""
    for module in LOADER_MODULES:
        importlib.import_module(module)
    done = set(DemoLoaded.objects.values_list("loader", flat=True))
    pending = [loader for loader in LOADERS if force or loader.name not in done]
    if not pending:
        return {loader.name: 0 for loader in LOADERS}
    project = Project.objects.filter(name=DEMO_PROJECT).order_by("id").first()
    if project is None:
        project = Project.objects.create(
            name=DEMO_PROJECT, description="Sample resource catalogue and models."
        )
    Membership.objects.get_or_create(project=project, user=owner, defaults={"role": Role.OWNER})
    created = {loader.name: 0 for loader in LOADERS}
    for loader in pending:
        created[loader.name] = loader().load(project)
        DemoLoaded.objects.update_or_create(loader=loader.name,
                                            defaults={"rows": created[loader.name]})
    return created


def already_loaded() -> bool:
    for module in LOADER_MODULES:
        importlib.import_module(module)
    done = set(DemoLoaded.objects.values_list("loader", flat=True))
    return all(loader.name in done for loader in LOADERS)


def admin_notice(username: str, password: str, stream: Any) -> str:
    """What to print about a newly created admin account on `stream`: its password only to
    a person at a terminal; output going to a file or a log (not a TTY) would keep it there,
    so that gets the command that sets one instead (issue 25.11)."""
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return (f"Created the admin account. Username: {username}  Password: {password}\n"
                "This password is shown only now; change it with "
                f"`manage.py changepassword {username}`.")
    return (f"Created the admin account {username!r}. Its password is not printed: this "
            "output is not a terminal and a log would keep it. Set one with "
            f"`manage.py changepassword {username}`.")
