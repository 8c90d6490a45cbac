"""The team without an administrator: owners invite (by username or e-mail, a link that
works once and expires), change roles and remove members; the last owner stays."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from webapp.projects import services
from webapp.projects.models import Invitation, Membership, Role

pytestmark = pytest.mark.django_db


def _token(text: str) -> str:
    found = re.search(r"/projects/join/\?token=([\w-]+)", text)
    assert found, text
    return found.group(1)


def _invite(client: Any, project: Any, who: str, role: str = "member") -> Any:
    return client.post(f"/projects/{project.pk}/team/invite/", {"who": who, "role": role})


def test_an_owner_invites_by_email_and_the_invitee_joins_once(
        personas: Any, client: Any, django_user_model: Any) -> None:
    client.force_login(personas.owner)
    response = _invite(client, personas.project, "carol@example.com")
    assert response.status_code == 200
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["carol@example.com"]
    token = _token(mail.outbox[0].body)
    assert token in response.content.decode()  # shown to the owner once as well
    invitation = Invitation.objects.get()
    assert invitation.token_hash != token and token not in invitation.token_hash  # hashed
    assert invitation.expires_at - timezone.now() > timedelta(days=6, hours=23)

    carol = django_user_model.objects.create_user("carol")
    client.force_login(carol)
    shown = client.get(f"/projects/join/?token={token}")
    assert shown.status_code == 200 and "Alpha" in shown.content.decode()
    assert not Membership.objects.filter(user=carol).exists()  # a GET changes nothing
    joined = client.post("/projects/join/", {"token": token})
    assert joined.status_code == 302
    assert Membership.objects.get(user=carol).role == Role.MEMBER
    again = client.post("/projects/join/", {"token": token})
    assert again.status_code == 400 and "already been used" in again.content.decode()


def test_an_anonymous_invitee_is_sent_to_sign_in_and_back(personas: Any, client: Any) -> None:
    invited = services.invite(personas.owner, personas.project, "x@example.com", "viewer",
                              lambda t: f"/projects/join/?token={t}")
    response = client.get(invited.link)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")
    assert "token%3D" in response["Location"]


def test_an_anonymous_invitee_is_sent_to_sign_up_when_it_is_open(
        personas: Any, client: Any, settings: Any) -> None:
    settings.SIGNUP_OPEN = True
    response = client.get("/projects/join/?token=abc")
    assert response.status_code == 302 and response["Location"].startswith(
        "/account/signup/?next=")


def test_inviting_an_account_by_username_binds_the_invitation_to_it(
        personas: Any, client: Any, django_user_model: Any) -> None:
    dave = django_user_model.objects.create_user("dave", email="dave@example.com")
    invited = services.invite(personas.owner, personas.project, "dave", "viewer",
                              lambda t: f"/projects/join/?token={t}")
    assert invited.mailed_to == "dave@example.com" and invited.invitation.user == dave
    client.force_login(personas.outsider)  # someone else holding the link
    refused = client.post("/projects/join/", {"token": _token(invited.link)})
    assert refused.status_code == 400 and "dave" in refused.content.decode()
    client.force_login(dave)
    assert client.post("/projects/join/", {"token": _token(invited.link)}).status_code == 302
    assert Membership.objects.get(user=dave).role == Role.VIEWER


@pytest.mark.parametrize(("who", "expected"), [
    ("member", "already a member"),
    ("nobody-here", "no account called"),
    ("not an@address", "not a valid e-mail"),
    ("", "This field is required"),
])
def test_bad_invitations_name_the_field(personas: Any, client: Any, who: str,
                                        expected: str) -> None:
    client.force_login(personas.owner)
    response = _invite(client, personas.project, who)
    assert response.status_code == 400
    text = response.content.decode()
    assert "Username or e-mail address" in text and expected in text.replace("&#x27;", "'")
    assert not Invitation.objects.exists()


def test_an_invitation_to_a_members_address_is_refused(personas: Any) -> None:
    from django.core.exceptions import ValidationError

    personas.member.email = "m@example.com"
    personas.member.save()
    with pytest.raises(ValidationError) as caught:
        services.invite(personas.owner, personas.project, "M@example.com", "member", str)
    assert "already a member" in str(caught.value.message_dict["who"])


def test_a_second_pending_invitation_is_refused_until_revoked(personas: Any,
                                                              client: Any) -> None:
    client.force_login(personas.owner)
    assert _invite(client, personas.project, "e@example.com").status_code == 200
    second = _invite(client, personas.project, "E@example.com")
    assert second.status_code == 400 and "pending invitation" in second.content.decode()
    invitation = Invitation.objects.get()
    assert client.post(f"/projects/invitations/{invitation.pk}/revoke/").status_code == 302
    assert _invite(client, personas.project, "e@example.com").status_code == 200


def test_expired_and_revoked_links_do_not_work(personas: Any, client: Any) -> None:
    expired = services.invite(personas.owner, personas.project, "a@example.com", "member",
                              lambda t: t)
    Invitation.objects.filter(pk=expired.invitation.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    revoked = services.invite(personas.owner, personas.project, "b@example.com", "member",
                              lambda t: t)
    services.revoke_invitation(personas.owner, revoked.invitation)
    client.force_login(personas.outsider)
    for link, words in ((expired.link, "expired"), (revoked.link, "revoked"),
                        ("wrong", "not valid")):
        response = client.post("/projects/join/", {"token": link})
        assert response.status_code == 400 and words in response.content.decode()
    assert not Membership.objects.filter(user=personas.outsider).exists()


def test_invitation_expiry_follows_the_setting(personas: Any, settings: Any) -> None:
    settings.INVITATION_DAYS = 2
    invited = services.invite(personas.owner, personas.project, "a@example.com", "member",
                              str)
    left = invited.invitation.expires_at - timezone.now()
    assert timedelta(days=1, hours=23) < left <= timedelta(days=2)


def test_owners_change_roles_and_remove_members_from_the_page(personas: Any,
                                                              client: Any) -> None:
    client.force_login(personas.owner)
    member = Membership.objects.get(user=personas.member)
    assert client.post(f"/projects/members/{member.pk}/role/",
                       {"role": "viewer"}).status_code == 302
    assert Membership.objects.get(pk=member.pk).role == Role.VIEWER
    assert client.post(f"/projects/members/{member.pk}/remove/").status_code == 302
    assert not Membership.objects.filter(pk=member.pk).exists()


def test_the_last_owner_can_be_neither_demoted_nor_removed(personas: Any,
                                                           client: Any) -> None:
    client.force_login(personas.owner)
    own = Membership.objects.get(user=personas.owner)
    demote = client.post(f"/projects/members/{own.pk}/role/", {"role": "member"})
    assert demote.status_code == 400 and "at least one owner" in demote.content.decode()
    remove = client.post(f"/projects/members/{own.pk}/remove/")
    assert remove.status_code == 400 and "at least one owner" in remove.content.decode()
    assert Membership.objects.get(pk=own.pk).role == Role.OWNER


def test_an_owner_who_made_another_owner_may_step_down(personas: Any, client: Any) -> None:
    client.force_login(personas.owner)
    member = Membership.objects.get(user=personas.member)
    client.post(f"/projects/members/{member.pk}/role/", {"role": "owner"})
    own = Membership.objects.get(user=personas.owner)
    assert client.post(f"/projects/members/{own.pk}/role/",
                       {"role": "viewer"}).status_code == 302
    page = client.get(f"/projects/{personas.project.pk}/team/")
    assert page.status_code == 200 and "Send invitation" not in page.content.decode()


@pytest.mark.parametrize("persona", ["member", "viewer"])
def test_members_and_viewers_see_the_team_read_only(personas: Any, client: Any,
                                                    persona: str) -> None:
    services.invite(personas.owner, personas.project, "secret@example.com", "member", str)
    client.force_login(getattr(personas, persona))
    page = client.get(f"/projects/{personas.project.pk}/team/").content.decode()
    assert "owner" in page and "member" in page and "viewer" in page
    assert "Send invitation" not in page and "Change role" not in page
    assert "secret@example.com" not in page  # invitees' addresses are the owners' business
    target = Membership.objects.get(user=personas.viewer)
    status = client.post(f"/projects/members/{target.pk}/role/", {"role": "owner"})
    assert status.status_code == 403
    assert Membership.objects.get(pk=target.pk).role == Role.VIEWER


def test_an_outsider_learns_nothing(personas: Any, client: Any) -> None:
    client.force_login(personas.outsider)
    member = Membership.objects.get(user=personas.member)
    assert client.get(f"/projects/{personas.project.pk}/team/").status_code == 404
    assert client.post(f"/projects/members/{member.pk}/remove/").status_code == 404
    assert _invite(client, personas.project, "x@example.com").status_code == 404


def test_an_owner_of_another_project_cannot_touch_this_ones_members(
        personas: Any, client: Any) -> None:
    services.create_project(personas.outsider, "Theirs")
    client.force_login(personas.outsider)
    member = Membership.objects.get(user=personas.member, project=personas.project)
    assert client.post(f"/projects/members/{member.pk}/role/",
                       {"role": "owner"}).status_code == 404
    assert Membership.objects.get(pk=member.pk).role == Role.MEMBER


def test_a_failing_mail_server_leaves_the_link_for_the_owner(
        personas: Any, client: Any, settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 9  # nothing listens there
    client.force_login(personas.owner)
    response = _invite(client, personas.project, "f@example.com")
    text = response.content.decode()
    assert response.status_code == 200 and "No e-mail was sent" in text
    assert _token(text)


# The API: a malformed token is a 400, a well-formed one naming no open invitation a 409
# (webapp/refusals.py); the pages answer both with the form's 400.
@pytest.mark.parametrize("token, api_status", [("", 400), ("x" * 100_000, 400), ("\x00", 400),
                                               ("../../etc", 409), ("é" * 300, 400)])
def test_bad_invitation_tokens_are_refused_naming_the_token(personas: Any, client: Any,
                                                            token: str, api_status: int) -> None:
    client.force_login(personas.outsider)
    for response, expected in (
            (client.get("/projects/join/", {"token": token}), 400),
            (client.post("/projects/join/", {"token": token}), 400),
            (client.post("/api/invitations/accept/", {"token": token},
                         content_type="application/json"), api_status)):
        assert response.status_code == expected
        assert "token" in response.content.decode().lower()
    assert not Membership.objects.filter(user=personas.outsider).exists()


def test_a_project_name_with_a_line_break_still_mails(personas: Any, client: Any) -> None:
    # The API takes any text as a name; a line break in a mail header raised (a 500).
    project = services.create_project(personas.owner, "Two\nlines")
    client.force_login(personas.owner)
    response = _invite(client, project, "lb@example.com")
    assert response.status_code == 200
    assert mail.outbox[0].subject == "Join Two lines on HeterPS"


def test_one_owner_sends_at_most_the_daily_number_of_invitations(
        personas: Any, client: Any, settings: Any) -> None:
    settings.INVITATIONS_PER_DAY = 2
    client.force_login(personas.owner)
    for n in range(2):
        assert _invite(client, personas.project, f"p{n}@example.com").status_code == 200
    refused = _invite(client, personas.project, "p3@example.com")
    assert refused.status_code == 400
    assert "2 invitations in the last 24 hours" in refused.content.decode()
    assert len(mail.outbox) == 2
