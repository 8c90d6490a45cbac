"""The team over the API: /api/memberships/ and /api/invitations/ (owners only for changes)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail

from webapp.projects.models import Invitation, Membership, Role

pytestmark = pytest.mark.django_db


def _post(client: Any, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, body, content_type="application/json")


def test_invite_accept_and_change_role_through_the_api(
        personas: Any, client: Any, django_user_model: Any) -> None:
    client.force_login(personas.owner)
    made = _post(client, "/api/invitations/", {"project": personas.project.pk,
                                              "who": "erin@example.com", "role": "viewer"})
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["state"] == "pending" and body["mailed_to"] == "erin@example.com"
    assert body["link"] in mail.outbox[0].body
    token = body["link"].split("token=")[1]
    listed = client.get(f"/api/invitations/?project={personas.project.pk}").json()
    assert [i["invitee"] for i in listed["results"]] == ["erin@example.com"]
    assert "link" not in listed["results"][0] and "token_hash" not in listed["results"][0]

    erin = django_user_model.objects.create_user("erin")
    client.force_login(erin)
    joined = _post(client, "/api/invitations/accept/", {"token": token})
    assert joined.status_code == 200 and joined.json()["role"] == "viewer"
    again = _post(client, "/api/invitations/accept/", {"token": token})
    # Well formed, refused by the present state (used): a 409 naming the field.
    assert again.status_code == 409 and "already been used" in again.json()["token"][0]

    client.force_login(personas.owner)
    membership = Membership.objects.get(user=erin)
    changed = client.patch(f"/api/memberships/{membership.pk}/", {"role": "member"},
                           content_type="application/json")
    assert changed.status_code == 200 and changed.json()["role"] == "member"
    assert client.delete(f"/api/memberships/{membership.pk}/").status_code == 204
    assert not Membership.objects.filter(user=erin).exists()


def test_the_last_owner_stays_over_the_api(personas: Any, client: Any) -> None:
    client.force_login(personas.owner)
    own = Membership.objects.get(user=personas.owner)
    demote = client.patch(f"/api/memberships/{own.pk}/", {"role": "viewer"},
                          content_type="application/json")
    assert demote.status_code == 409 and "owner" in demote.json()["role"][0]
    assert client.delete(f"/api/memberships/{own.pk}/").status_code == 409
    assert Membership.objects.get(pk=own.pk).role == Role.OWNER


def test_an_existing_member_is_refused_naming_the_field(personas: Any, client: Any) -> None:
    client.force_login(personas.owner)
    response = _post(client, "/api/invitations/", {"project": personas.project.pk,
                                                  "who": "viewer"})
    assert response.status_code == 409 and "already a viewer" in response.json()["who"][0]
    assert not Invitation.objects.exists()


@pytest.mark.parametrize("persona", ["member", "viewer"])
def test_members_may_list_the_team_but_not_change_it(personas: Any, client: Any,
                                                     persona: str) -> None:
    client.force_login(getattr(personas, persona))
    listed = client.get("/api/memberships/").json()
    assert {m["username"] for m in listed["results"]} == {"owner", "member", "viewer"}
    assert client.get("/api/invitations/").json()["results"] == []
    own = Membership.objects.get(user=getattr(personas, persona))
    promote = client.patch(f"/api/memberships/{own.pk}/", {"role": "owner"},
                           content_type="application/json")
    assert promote.status_code == 403
    invite = _post(client, "/api/invitations/", {"project": personas.project.pk,
                                                "who": "x@example.com"})
    assert invite.status_code == 403 and not Invitation.objects.exists()


def test_outsiders_see_no_members_and_get_404(personas: Any, client: Any) -> None:
    client.force_login(personas.outsider)
    assert client.get("/api/memberships/").json()["results"] == []
    member = Membership.objects.get(user=personas.member)
    assert client.get(f"/api/memberships/{member.pk}/").status_code == 404
    assert client.delete(f"/api/memberships/{member.pk}/").status_code == 404
