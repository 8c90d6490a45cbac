"""Demo resource catalogue: a CPU type and three GPU kinds at typical cloud list prices."""

from __future__ import annotations

from webapp.catalogue.models import ResourceType
from webapp.demo import DemoLoader, register
from webapp.projects.models import Project

# name, kind, $/h per unit, count, memory GB per unit, network Gbit/s per unit
DEMO_CATALOGUE = [
    ("cpu-96", "cpu", 3.65, 64, 384.0, 50.0),
    ("t4", "gpu", 0.53, 16, 16.0, 32.0),
    ("v100", "gpu", 2.48, 16, 32.0, 32.0),
    ("a100-40", "gpu", 3.67, 8, 40.0, 100.0),
]


@register
class CatalogueDemo(DemoLoader):
    name = "resource catalogue"

    def load(self, project: Project) -> int:
        created = 0
        for name, kind, price, count, memory, network in DEMO_CATALOGUE:
            _, new = ResourceType.objects.get_or_create(
                project=project,
                name=name,
                defaults={
                    "kind": kind,
                    "price_per_hour": price,
                    "count": count,
                    "memory_gb": memory,
                    "network_gbps": network,
                },
            )
            created += new
        return created
