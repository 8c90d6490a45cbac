"""Demo models: the zoo entries as they appear in the zoo, at the size this machine profiles."""

from __future__ import annotations

from heterps_core import zoo
from webapp.demo import DemoLoader, register
from webapp.modelzoo.models import RegisteredModel
from webapp.modelzoo.services import size_description, zoo_chain
from webapp.projects.models import Project

DEMO_SIZE = "tiny"


@register
class ZooDemo(DemoLoader):
    name = "zoo models"

    def load(self, project: Project) -> int:
        created = 0
        for zoo_name in zoo.names():
            entry = zoo.get(zoo_name)
            layers = zoo_chain(zoo_name, DEMO_SIZE)
            _, new = RegisteredModel.objects.get_or_create(
                project=project,
                name=f"{zoo_name}-{DEMO_SIZE}",
                defaults={"zoo_name": zoo_name, "size": DEMO_SIZE,
                          "description": size_description(
                              entry.description, DEMO_SIZE, entry.config(DEMO_SIZE), layers),
                          "default_batch_size": entry.default_batch_size,
                          "layers": layers},
            )
            created += new
        return created
