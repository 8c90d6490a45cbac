"""Project names become unique among the projects one user owns (every picker showed two
"Demo"s). Existing duplicates keep their oldest project's name; later ones get " (2)", " (3)"...
"""

from __future__ import annotations

from typing import Any

from django.db import migrations


def rename_duplicates(apps: Any, schema_editor: Any) -> None:
    Project = apps.get_model("projects", "Project")
    Membership = apps.get_model("projects", "Membership")
    taken: dict[int, set[str]] = {}  # owner id -> lower-cased names they own
    for project in Project.objects.order_by("id"):
        owners = list(Membership.objects.filter(project=project, role="owner")
                      .values_list("user_id", flat=True))
        name, k = project.name, 2
        while any(name.lower() in taken.get(o, set()) for o in owners):
            suffix = f" ({k})"
            name, k = project.name[: 120 - len(suffix)] + suffix, k + 1
        if name != project.name:
            project.name = name
            project.save(update_fields=["name"])
        for owner in owners:
            taken.setdefault(owner, set()).add(name.lower())


class Migration(migrations.Migration):
    dependencies = [("projects", "0001_initial")]
    operations = [migrations.RunPython(rename_duplicates, migrations.RunPython.noop)]
