"""Project pages: thin views over `webapp.projects.services` and the permission helper."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.middleware import AuthenticatedRequest
from webapp.projects import services
from webapp.projects.forms import InviteForm, ProjectForm, RoleForm
from webapp.projects.models import Invitation, Membership, Project, Role
from webapp.projects.permissions import Action, can, get_owned, get_project, role_of, valid_id


def create(request: AuthenticatedRequest) -> HttpResponse:
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            project = services.create_project(
                request.user, form.cleaned_data["name"], form.cleaned_data["description"]
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return redirect("projects:detail", pk=project.pk)
    return render(request, "projects/create.html", {"form": form})


# The team page. Everyone in the project sees who is in it with which role; only owners see
# the pending invitations (they hold people's addresses) and the forms.
def team(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    return _team(request, get_project(request.user, pk))


def _team(request: AuthenticatedRequest, project: Project, status: int = 200,
          invite_form: InviteForm | None = None, invited: services.Invited | None = None,
          role_errors: dict[int, Any] | None = None) -> HttpResponse:
    manage = can(request.user, project, Action.MANAGE)
    context = {
        "project": project, "role": role_of(request.user, project), "manage": manage,
        "memberships": services.team(project),
        "invitations": services.pending_invitations(project) if manage else [],
        "invite_form": invite_form or InviteForm(), "invited": invited,
        "role_errors": role_errors or {}, "roles": Role.choices,
        "invitation_days": settings.INVITATION_DAYS,
    }
    return render(request, "projects/team.html", context, status=status)


@require_POST
def invite(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    project = get_project(request.user, pk, Action.MANAGE)
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            invited = services.invite(request.user, project, form.cleaned_data["who"],
                                      form.cleaned_data["role"],
                                      lambda token: accept_link(request, token))
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            return _team(request, project, invited=invited)
    return _team(request, project, status=400, invite_form=form)


@require_POST
def set_role(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    membership = get_owned(request.user, Membership.objects.select_related("project", "user"),
                           valid_id(pk) or 0, Action.MANAGE)
    form = RoleForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError({"role": list(form.errors.get("role", ["is invalid"]))})
        services.set_member(request.user, membership.project, membership.user,
                            form.cleaned_data["role"])
    except ValidationError as exc:
        return _team(request, membership.project, status=400,
                     role_errors={membership.pk: _messages(exc)})
    messages.success(request, f"{membership.user.get_username()} is now "
                              f"{form.cleaned_data['role']}.")
    return _after_change(request, membership.project)


@require_POST
def remove(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    membership = get_owned(request.user, Membership.objects.select_related("project", "user"),
                           valid_id(pk) or 0, Action.MANAGE)
    try:
        services.remove_member(request.user, membership.project, membership.user)
    except ValidationError as exc:
        return _team(request, membership.project, status=400,
                     role_errors={membership.pk: _messages(exc)})
    messages.success(request, f"Removed {membership.user.get_username()} from the project.")
    return _after_change(request, membership.project)


@require_POST
def revoke(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    invitation = get_owned(request.user, Invitation.objects.select_related("user"),
                           valid_id(pk) or 0, Action.MANAGE)
    services.revoke_invitation(request.user, invitation)
    messages.success(request, f"Revoked the invitation to {invitation.invitee}.")
    return redirect("projects:team", pk=invitation.project_id)


def _after_change(request: AuthenticatedRequest, project: Project) -> HttpResponse:
    # An owner who made themselves a viewer, or left, may no longer see the forms (or page).
    if role_of(request.user, project) is None:
        return redirect("dashboard:home")
    return redirect("projects:team", pk=project.pk)


# Accepting: the link is `/projects/join/?token=...`. GET only shows what it is (mail
# scanners follow links); the button POSTs.
@login_not_required
def accept(request: HttpRequest) -> HttpResponse:
    token = request.POST.get("token") or request.GET.get("token") or ""
    if not request.user.is_authenticated:
        where = "accounts:signup" if settings.SIGNUP_OPEN else "login"
        return redirect(f"{reverse(where)}?{urlencode({'next': request.get_full_path()})}")
    user = request.user
    try:
        invitation = services.invitation_for(token)
        if request.method == "POST":
            membership = services.accept_invitation(user, token)
            messages.success(request, f"You joined {membership.project.name} as "
                                      f"{membership.role}.")
            return redirect("projects:detail", pk=membership.project_id)
    except ValidationError as exc:
        return render(request, "projects/accept.html",
                      {"problems": _messages(exc), "token": token}, status=400)
    return render(request, "projects/accept.html", {"invitation": invitation, "token": token})


def accept_link(request: HttpRequest, token: str) -> str:
    return request.build_absolute_uri(f"{reverse('projects:accept')}?"
                                      f"{urlencode({'token': token})}")


def _add_errors(form: Any, exc: ValidationError) -> None:
    for field, problems in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, problems)


def _messages(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [f"{field}: {m}" if field != "__all__" else m
                for field, problems in exc.message_dict.items() for m in problems]
    return list(exc.messages)
