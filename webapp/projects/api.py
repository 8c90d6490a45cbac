"""REST API for projects."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet
from rest_framework import mixins, serializers, viewsets

from webapp.bounds import MAX_TEXT
from webapp.projects import services
from webapp.projects.models import Membership, Project
from webapp.projects.permissions import role_of, visible_projects


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role"]


class ProjectListSerializer(serializers.ListSerializer):
    """The list (a page of projects) in two steps: the projects' own fields, and every
    row's members from one `values_list` query, built as plain dicts. What it returns is
    exactly what ProjectSerializer gives one project (tests/webapp/projects/
    test_query_counts.py compares them); under load the generic path cost ~20 ms of CPU
    per page of 50 projects x 10 members, instantiating a model per membership and user."""

    def to_representation(self, data: Any) -> list[dict[str, Any]]:
        projects = list(data.all() if isinstance(data, QuerySet) else data)
        members: dict[int, list[dict[str, Any]]] = {p.pk: [] for p in projects}
        mine: dict[int, str] = {}
        user_id = self.context["request"].user.pk
        # Membership's Meta ordering (project, role, user), as the prefetch had it.
        rows = Membership.objects.filter(project_id__in=list(members)).values_list(
            "project_id", "user_id", "user__username", "role")
        for project_id, member_id, username, role in rows:
            members[project_id].append({"username": username, "role": role})
            if member_id == user_id:
                mine[project_id] = role
        created_at = self.child.fields["created_at"]
        return [{"id": p.pk, "name": p.name, "description": p.description,
                 "created_at": created_at.to_representation(p.created_at),
                 "my_role": mine.get(p.pk), "memberships": members[p.pk]}
                for p in projects]


class ProjectSerializer(serializers.ModelSerializer):
    memberships = MembershipSerializer(many=True, read_only=True)
    my_role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["id", "name", "description", "created_at", "my_role", "memberships"]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = {"description": {"max_length": MAX_TEXT}}
        list_serializer_class = ProjectListSerializer

    def get_my_role(self, project: Project) -> str | None:
        # From the prefetched memberships: one query per row made the list cost 55 queries.
        user_id = self.context["request"].user.pk
        if "memberships" in getattr(project, "_prefetched_objects_cache", {}):
            return next((m.role for m in project.memberships.all() if m.user_id == user_id),
                        None)
        return role_of(self.context["request"].user, project)


class ProjectViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Projects you are a member of; creating one makes you its owner."""

    serializer_class = ProjectSerializer

    def get_queryset(self) -> QuerySet[Project]:
        projects = visible_projects(self.request.user)
        if self.action == "list":  # ProjectListSerializer fetches the members itself
            return projects
        # One query for the members, with only the columns shown.
        members = Membership.objects.select_related("user").only(
            "role", "project_id", "user_id", "user__username")
        return projects.prefetch_related(Prefetch("memberships", queryset=members))

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        serializer.instance = services.create_project(
            self.request.user, data["name"], data.get("description", "")
        )
