"""Admin for projects, plus `ProjectScopedAdmin`: the base for every project-owned model."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest

from webapp.projects.models import Invitation, Membership, Project
from webapp.projects.permissions import Action, can, projects_for, visible, visible_projects


class ProjectScopedAdmin(admin.ModelAdmin):
    """Staff see and change only rows of projects where their role allows it; a
    superuser sees everything (they run the installation)."""

    project_field = "project"
    change_action = Action.EDIT
    delete_action = Action.EDIT

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return visible(request.user, queryset, self.project_field)

    def _allowed(self, request: HttpRequest, obj: Any, action: Action) -> bool:
        if request.user.is_superuser or obj is None:
            return True
        return can(request.user, self._project_id(obj), action)

    def _project_id(self, obj: Any) -> int:
        return int(obj.project_id)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        # Adding needs a project to add to: one where the role allows `change_action`.
        allowed = super().has_add_permission(request, *args)
        return allowed and (request.user.is_superuser or self._editable(request).exists())

    def _editable(self, request: HttpRequest) -> QuerySet[Project]:
        return projects_for(request.user, self.change_action)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # Behind the form's choices: a row may only be saved into a project the user edits.
        adding = obj.pk is None and self.project_field == "project"
        if adding and not request.user.is_superuser and not can(
                request.user, self._project_id(obj), self.change_action):
            raise PermissionDenied("You may not add rows to this project.")
        super().save_model(request, obj, form, change)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and self._allowed(request, obj, self.change_action)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and self._allowed(request, obj, self.delete_action)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if not request.user.is_superuser:
            related = db_field.related_model
            if db_field.name == "project" or related is Project:
                kwargs["queryset"] = self._editable(request)
            elif any(f.name == "project" for f in related._meta.get_fields()):
                # Another project-owned row (a job's work, a run's model): only from
                # projects the user may edit, never another project's.
                kwargs["queryset"] = related._default_manager.filter(
                    project__in=self._editable(request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(ProjectScopedAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]
    change_action = delete_action = Action.MANAGE

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        if request.user.is_superuser:
            return Project.objects.all()
        return visible_projects(request.user)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return admin.ModelAdmin.has_add_permission(self, request)  # a new project is one's own

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super(ProjectScopedAdmin, self).save_model(request, obj, form, change)
        if not change and not request.user.is_superuser:
            Membership.objects.get_or_create(project=obj, user=cast(User, request.user),
                                             defaults={"role": "owner"})

    def _project_id(self, obj: Any) -> int:
        return int(obj.pk)


@admin.register(Membership)
class MembershipAdmin(ProjectScopedAdmin):
    list_display = ["project", "user", "role"]
    list_filter = ["role"]
    autocomplete_fields = ["user", "project"]
    change_action = delete_action = Action.MANAGE


@admin.register(Invitation)
class InvitationAdmin(ProjectScopedAdmin):
    """Read-only: invitations are made on the team page or the API (the link's token is
    shown once, there); an owner may delete one here."""

    list_display = ["project", "email", "user", "role", "created_at", "expires_at",
                    "accepted_at", "revoked_at"]
    list_filter = ["role"]
    readonly_fields = ["project", "email", "user", "role", "invited_by", "created_at",
                       "expires_at", "accepted_at", "accepted_by", "revoked_at"]
    exclude = ["token_hash"]
    change_action = delete_action = Action.MANAGE

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False
