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


class ProjectSerializer(serializers.ModelSerializer):
    memberships = MembershipSerializer(many=True, read_only=True)
    my_role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["id", "name", "description", "created_at", "my_role", "memberships"]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = {"description": {"max_length": MAX_TEXT}}

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
        # One query for every row's members, with only the columns shown (the list was
        # slow under load instantiating whole users).
        members = Membership.objects.select_related("user").only(
            "role", "project_id", "user_id", "user__username")
        return visible_projects(self.request.user).prefetch_related(
            Prefetch("memberships", queryset=members))

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        serializer.instance = services.create_project(
            self.request.user, data["name"], data.get("description", "")
        )
