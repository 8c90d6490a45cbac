"""Demo cluster: every resource type of the demo catalogue in one pool."""

from __future__ import annotations

from webapp.catalogue.models import ResourceType
from webapp.demo import DemoLoader, register
from webapp.planning.models import Cluster
from webapp.projects.models import Project

DEMO_CLUSTER = "Demo cluster"


@register
class ClusterDemo(DemoLoader):
    name = "clusters"

    def load(self, project: Project) -> int:
        types = list(ResourceType.objects.filter(project=project))
        if not types:
            return 0
        cluster, created = Cluster.objects.get_or_create(
            project=project, name=DEMO_CLUSTER,
            defaults={"description": "Every resource type of the demo catalogue."})
        if created:
            cluster.resource_types.set(types)
        return int(created)
