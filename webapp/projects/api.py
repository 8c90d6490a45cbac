"""REST API for projects."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.bounds import MAX_TEXT, api_id, api_number, filter_by_query
from webapp.projects import services
from webapp.projects.models import Invitation, Membership, Project, Role
from webapp.projects.permissions import (
    Action,
    get_owned,
    get_project,
    projects_for,
    role_of,
    valid_id,
    visible,
    visible_projects,
)
from webapp.projects.views import accept_link


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
                 "budget": p.budget, "created_at": created_at.to_representation(p.created_at),
                 "my_role": mine.get(p.pk), "memberships": members[p.pk]}
                for p in projects]


class ProjectSerializer(serializers.ModelSerializer):
    memberships = MembershipSerializer(many=True, read_only=True)
    my_role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["id", "name", "description", "budget", "created_at", "my_role",
                  "memberships"]
        # The budget is its owners' to set (POST .../budget/), never a side effect of a create.
        read_only_fields = ["id", "budget", "created_at"]
        extra_kwargs = {"description": {"max_length": MAX_TEXT}}
        list_serializer_class = ProjectListSerializer

    def get_my_role(self, project: Project) -> str | None:
        # From the prefetched memberships: one query per row made the list cost 55 queries.
        user_id = self.context["request"].user.pk
        if "memberships" in getattr(project, "_prefetched_objects_cache", {}):
            return next((m.role for m in project.memberships.all() if m.user_id == user_id),
                        None)
        return role_of(self.context["request"].user, project)


class BudgetSerializer(serializers.Serializer):
    budget = api_number("budget", allow_null=True,
                        help_text="$ (docs/limits.md `budget`), or null for no budget")


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

    @extend_schema(request=BudgetSerializer, responses={200: ProjectSerializer})
    @action(detail=True, methods=["post"])
    def budget(self, request: Request, pk: str | None = None) -> Response:
        """Set (or clear, null) the project's budget: $ over all its jobs' runs, which their
        runners hold them to (owners only; a member gets 403)."""
        project = get_project(request.user, valid_id(pk) or 0, Action.MANAGE)
        body = BudgetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.set_budget(request.user, project, body.validated_data["budget"])
        return Response(self.get_serializer(self.get_queryset().get(pk=project.pk)).data)

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        serializer.instance = services.create_project(
            self.request.user, data["name"], data.get("description", "")
        )


# The team over the API: memberships (role changes, removal) and invitations. Owners only
# for every change; members and viewers may list who is in their projects.
class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "project", "username", "role", "created_at"]
        read_only_fields = fields


class RoleSerializer(serializers.Serializer):
    """A membership's new role: the one thing a PATCH changes, so required (a body
    without it is a 400 naming `role`)."""

    role = serializers.ChoiceField(choices=Role.choices)

    # The schema keeps `role` required (webapp/api_schema.py). Not a no-op 200 without it:
    # a misspelt field would then look like a change made.
    whole_in_patch = True


class InvitationSerializer(serializers.ModelSerializer):
    invitee = serializers.CharField(read_only=True)
    username = serializers.CharField(source="user.username", read_only=True, default=None,
                                     allow_null=True)
    invited_by = serializers.CharField(source="invited_by.username", read_only=True,
                                       default=None, allow_null=True)
    state = serializers.SerializerMethodField()

    class Meta:
        model = Invitation
        fields = ["id", "project", "invitee", "username", "email", "role", "state",
                  "invited_by", "created_at", "expires_at", "accepted_at", "revoked_at"]
        read_only_fields = fields

    def get_state(self, invitation: Invitation) -> str:
        if invitation.accepted_at:
            return "accepted"
        if invitation.revoked_at:
            return "revoked"
        return "pending" if invitation.pending else "expired"


class InviteSerializer(serializers.Serializer):
    project = api_id()
    who = serializers.CharField(max_length=254, help_text="a username or an e-mail address")
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)


class InvitedSerializer(InvitationSerializer):
    link = serializers.CharField(read_only=True, help_text="shown only in this answer")
    mailed_to = serializers.CharField(read_only=True)

    class Meta(InvitationSerializer.Meta):
        fields = [*InvitationSerializer.Meta.fields, "link", "mailed_to"]
        read_only_fields = fields


class AcceptSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=200)


class MembershipViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Members of your projects (`?project=`); owners change a role (PATCH) or remove one."""

    serializer_class = MemberSerializer

    def get_queryset(self) -> QuerySet[Membership]:
        rows = visible(self.request.user, Membership.objects.select_related("user"))
        return filter_by_query(self.request.query_params, rows, "project").order_by("id")

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        return Response(MemberSerializer(self._get(pk, Action.VIEW)).data)

    @extend_schema(request=RoleSerializer, responses={200: MemberSerializer})
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        membership = self._get(pk, Action.MANAGE)
        change = RoleSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        membership = services.set_member(request.user, membership.project, membership.user,
                                         change.validated_data["role"])
        return Response(MemberSerializer(membership).data)

    def destroy(self, request: Request, pk: str | None = None) -> Response:
        membership = self._get(pk, Action.MANAGE)
        services.remove_member(request.user, membership.project, membership.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _get(self, pk: str | None, action: Action) -> Membership:
        return get_owned(self.request.user, Membership.objects.select_related("project", "user"),
                         valid_id(pk) or 0, action)


class InvitationViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Invitations of the projects you own (`?project=`): invite by username or e-mail,
    revoke (DELETE); anyone signed in accepts one with its link's token."""

    serializer_class = InvitationSerializer

    def get_queryset(self) -> QuerySet[Invitation]:
        rows = Invitation.objects.filter(project__in=projects_for(self.request.user,
                                                                  Action.MANAGE))
        rows = rows.select_related("user", "invited_by")
        return filter_by_query(self.request.query_params, rows, "project").order_by("-id")

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        return Response(InvitationSerializer(self._get(pk)).data)

    @extend_schema(request=InviteSerializer, responses={201: InvitedSerializer})
    def create(self, request: Request) -> Response:
        ask = InviteSerializer(data=request.data)
        ask.is_valid(raise_exception=True)
        data = ask.validated_data
        project = get_project(request.user, data["project"], Action.MANAGE)
        invited = services.invite(request.user, project, data["who"], data["role"],
                                  lambda token: accept_link(request, token))
        answer = InvitationSerializer(invited.invitation).data
        answer.update(link=invited.link, mailed_to=invited.mailed_to)
        return Response(answer, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, pk: str | None = None) -> Response:
        services.revoke_invitation(request.user, self._get(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=AcceptSerializer, responses={200: MemberSerializer})
    @action(detail=False, methods=["post"])
    def accept(self, request: Request) -> Response:
        ask = AcceptSerializer(data=request.data)
        ask.is_valid(raise_exception=True)
        membership = services.accept_invitation(request.user, ask.validated_data["token"])
        return Response(MemberSerializer(membership).data)

    def _get(self, pk: str | None) -> Invitation:
        return get_owned(self.request.user,
                         Invitation.objects.select_related("project", "user", "invited_by"),
                         valid_id(pk) or 0, Action.MANAGE)
