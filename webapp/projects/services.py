"""Project rules: creating projects and managing who may do what in them."""

from __future__ import annotations

import hashlib
import logging
import secrets
import smtplib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from heterps_core.errors import InstanceError
from heterps_core.limits import LIMITS
from webapp.projects.models import Invitation, Membership, Project, Role
from webapp.projects.permissions import Action, AnyUser, check, role_of
from webapp.refusals import StateRefusal

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)


@transaction.atomic
def create_project(owner: User, name: str, description: str = "") -> Project:
    """A new project whose creator is its first owner."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "must not be empty"})
    if owned_name_taken(owner, name):
        # The same body succeeds once the other project is renamed: the state's (409).
        raise StateRefusal({"name": f"you already own a project called {name!r}; "
                                     "pickers could not tell them apart"})
    project = Project.objects.create(name=name, description=description.strip())
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    return project


def checked_budget(value: Any, field: str = "budget") -> float | None:
    """A budget in dollars (docs/limits.md), or None for none; ValidationError naming `field`."""
    if value is None or value == "":
        return None
    try:
        return float(LIMITS["budget"].check(value, field))
    except InstanceError as exc:
        raise ValidationError({field: exc.problem}) from None


def set_budget(actor: AnyUser, project: Project, value: Any) -> Project:
    """Owners set (or clear, None) the project's budget: dollars over all its jobs' runs,
    which every job's runner holds its runs to (webapp.budgets)."""
    check(actor, project, Action.MANAGE)
    budget = checked_budget(value)
    Project.objects.filter(pk=project.pk).update(budget=budget)
    project.budget = budget
    return project


def owned_name_taken(owner: User, name: str) -> bool:
    """Project names are unique (ignoring case) among the projects one user owns."""
    return Project.objects.filter(memberships__user=owner, memberships__role=Role.OWNER,
                                  name__iexact=name.strip()).exists()


@transaction.atomic
def set_member(actor: AnyUser, project: Project, user: User, role: str) -> Membership:
    """Give `user` the role (adding them if needed); only owners may."""
    check(actor, project, Action.MANAGE)
    if role not in Role.values:
        raise ValidationError({"role": f"must be one of {', '.join(Role.values)}"})
    membership, _ = Membership.objects.select_for_update().get_or_create(
        project=project, user=user, defaults={"role": role}
    )
    if membership.role != role:
        if membership.role == Role.OWNER:
            _keep_an_owner(project, leaving=membership)
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def remove_member(actor: AnyUser, project: Project, user: User) -> None:
    check(actor, project, Action.MANAGE)
    membership = Membership.objects.filter(project=project, user=user).first()
    if membership is None:
        return
    if membership.role == Role.OWNER:
        _keep_an_owner(project, leaving=membership)
    membership.delete()


def _keep_an_owner(project: Project, leaving: Membership) -> None:
    # A project without an owner could never get new members again.
    # The owners' rows are locked, so two owners demoting each other at once cannot both pass.
    owners = Membership.objects.select_for_update().filter(project=project, role=Role.OWNER)
    if not [m for m in owners if m.pk != leaving.pk]:
        raise StateRefusal({"role": "a project needs at least one owner"})


# The team: invitations (by username or e-mail, a link that works once and expires), roles,
# removal. Only owners manage; the last owner can be neither demoted nor removed.
@dataclass(frozen=True)
class Invited:
    invitation: Invitation
    link: str  # shown to the owner once (the token is stored only hashed)
    mailed_to: str  # the address the link went to; "" when none (or sending failed)


def team(project: Project) -> QuerySet[Membership]:
    return project.memberships.select_related("user").order_by("role", "user__username")


def pending_invitations(project: Project) -> QuerySet[Invitation]:
    return project.invitations.filter(accepted_at__isnull=True, revoked_at__isnull=True,
                                      expires_at__gt=timezone.now()).select_related("user")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def invite(actor: User, project: Project, who: str, role: str,
           link_for: Callable[[str], str]) -> Invited:
    """Invite `who` (a username or an e-mail address) with `role`; mail them the link
    `link_for(token)` when there is an address."""
    check(actor, project, Action.MANAGE)
    if role not in Role.values:
        raise ValidationError({"role": f"must be one of {', '.join(Role.values)}"})
    _within_daily_limit(actor)
    user, email = _invitee(project, (who or "").strip())
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        project=project, user=user, email=email, role=role, token_hash=hash_token(token),
        invited_by=actor,
        expires_at=timezone.now() + timedelta(days=settings.INVITATION_DAYS))
    link = link_for(token)
    mailed_to = _mail(invitation, actor, link) if email else ""
    return Invited(invitation, link, mailed_to)


def _within_daily_limit(actor: User) -> None:
    # Anyone signed in may create a project and so invite: without a cap the invitation
    # mail would be a way to send mail to any address, as often as one likes.
    limit = settings.INVITATIONS_PER_DAY
    sent = Invitation.objects.filter(invited_by=actor,
                                     created_at__gte=timezone.now() - timedelta(days=1)).count()
    if sent >= limit:
        raise ValidationError({"who": f"you sent {sent} invitations in the last 24 hours, "
                                      f"the most allowed ({limit}); try again tomorrow"})


def _invitee(project: Project, who: str) -> tuple[User | None, str]:
    """The account (named by username) and the address an invitation goes to."""
    from django.contrib.auth import get_user_model

    if not who:
        raise ValidationError({"who": "give a username or an e-mail address"})
    if len(who) > 254:
        raise ValidationError({"who": "must be at most 254 characters"})
    users = get_user_model().objects
    if "@" in who:
        try:
            validate_email(who)
        except ValidationError:
            raise ValidationError({"who": f"{who!r} is not a valid e-mail address"}) from None
        member = project.memberships.filter(user__email__iexact=who).first()
        user, email = None, who
    else:
        user = users.filter(username=who).first()
        if user is None:
            raise StateRefusal({"who": f"there is no account called {who!r}; invite "
                                          "their e-mail address instead"})
        member = project.memberships.filter(user=user).first()
        email = user.email
    if member is not None:
        article = "an" if member.role == Role.OWNER else "a"
        raise StateRefusal({"who": f"{who} is already {article} {member.role} of this project; "
                                      "change their role in the members list instead"})
    pending = pending_invitations(project)
    if (user and pending.filter(user=user).exists()) or (
            not user and pending.filter(email__iexact=email).exists()):
        raise StateRefusal({"who": f"{who} already has a pending invitation; "
                                      "revoke it first to send a new one"})
    return user, email


def _mail(invitation: Invitation, actor: User, link: str) -> str:
    expires = invitation.expires_at.strftime("%Y-%m-%d %H:%M UTC")
    body = (f"{actor.get_username()} invited you to the HeterPS project "
            f"\"{invitation.project.name}\" as {invitation.role}.\n\n"
            f"Accept the invitation: {link}\n\n"
            f"The link works once and expires on {expires}.\n")
    # A project name may hold a line break (the API takes any text); a header may not.
    subject = f"Join {' '.join(invitation.project.name.split())} on HeterPS"
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [invitation.email])
    except (OSError, smtplib.SMTPException) as exc:
        # The invitation stands: the owner is shown the link to pass on themselves.
        log.warning("could not mail the invitation to %s: %s", invitation.email, exc)
        return ""
    return invitation.email


def revoke_invitation(actor: User, invitation: Invitation) -> Invitation:
    check(actor, invitation.project_id, Action.MANAGE)
    if invitation.revoked_at is None and invitation.accepted_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
    return invitation


def invitation_for(token: str) -> Invitation:
    """The invitation a link's token names, if it can still be accepted."""
    found = (Invitation.objects.select_related("project", "user")
             .filter(token_hash=hash_token(token or "")).first())
    if found is None:
        raise StateRefusal({"token": "this invitation link is not valid; check that you "
                                        "copied all of it"})
    if found.revoked_at is not None:
        raise StateRefusal({"token": "this invitation was revoked by a project owner"})
    if found.accepted_at is not None:
        raise StateRefusal({"token": "this invitation link has already been used"})
    if found.expires_at <= timezone.now():
        raise StateRefusal({"token": "this invitation expired; ask a project owner "
                                        "for a new one"})
    return found


@transaction.atomic
def accept_invitation(user: User, token: str) -> Membership:
    """Join the invitation's project with its role; the link then stops working."""
    invitation = invitation_for(token)
    # Locked, and checked again: two clicks at once must not both join.
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if invitation.accepted_at is not None:
        raise StateRefusal({"token": "this invitation link has already been used"})
    if invitation.user_id is not None and invitation.user_id != user.pk:
        raise StateRefusal({"token": f"this invitation is for the account "
                                        f"{invitation.invitee}; sign in as them to accept"})
    current = role_of(user, invitation.project_id)
    if current is not None:
        raise StateRefusal({"token": f"you are already {'an' if current == Role.OWNER else 'a'} "
                                        f"{current} of this project"})
    membership = Membership.objects.create(project_id=invitation.project_id, user=user,
                                           role=invitation.role)
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    return membership
