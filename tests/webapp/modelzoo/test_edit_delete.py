"""Models are edited and deleted in the pages (issue 25.11): members and owners, never
viewers or outsiders; a name taken in the project is named; a model whose profile is still
running is not deleted."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.background.models import Status, Work
from webapp.modelzoo.models import RegisteredModel
from webapp.profiling.models import ProfileRun

pytestmark = pytest.mark.django_db


def test_a_member_edits_a_model(login: Any, personas: Any, zoo_model: Any) -> None:
    client = login(personas.member)
    detail = client.get(f"/models/{zoo_model.pk}/").content.decode()
    assert f'href="/models/{zoo_model.pk}/edit/"' in detail
    response = client.post(f"/models/{zoo_model.pk}/edit/", {
        "name": "ctr for ads", "description": "the ads team's", "default_batch_size": "512"})
    assert response.status_code == 302
    zoo_model.refresh_from_db()
    assert (zoo_model.name, zoo_model.description, zoo_model.default_batch_size) == (
        "ctr for ads", "the ads team's", 512)
    assert zoo_model.zoo_name == "ctr_dnn"  # what it is stays


def test_a_taken_name_and_a_bad_batch_are_named(login: Any, personas: Any,
                                                zoo_model: Any) -> None:
    RegisteredModel.objects.create(project=personas.project, name="other", zoo_name="ctr_dnn")
    response = login(personas.member).post(f"/models/{zoo_model.pk}/edit/", {
        "name": "other", "description": "", "default_batch_size": "64"})
    assert response.status_code == 400
    assert "a model called &#x27;other&#x27; already exists" in response.content.decode()
    bad = login(personas.member).post(f"/models/{zoo_model.pk}/edit/", {
        "name": "x", "default_batch_size": "0"})
    assert bad.status_code == 400 and "batch" in bad.content.decode().lower()


def test_viewers_and_outsiders_cannot(login: Any, personas: Any, zoo_model: Any) -> None:
    assert login(personas.viewer).get(f"/models/{zoo_model.pk}/edit/").status_code == 403
    assert login(personas.viewer).post(f"/models/{zoo_model.pk}/delete/").status_code == 403
    assert 'id="edit-model"' not in login(personas.viewer).get(
        f"/models/{zoo_model.pk}/").content.decode()
    assert login(personas.outsider).post(f"/models/{zoo_model.pk}/delete/").status_code == 404
    assert RegisteredModel.objects.filter(pk=zoo_model.pk).exists()


def test_delete_takes_its_profiles_and_waits_for_running_ones(
    login: Any, personas: Any, zoo_model: Any
) -> None:
    work = Work.objects.create(project=personas.project, kind="profile", status=Status.RUNNING,
                               created_by=personas.member, params={})
    run = ProfileRun.objects.create(project=personas.project, model=zoo_model, batch_size=64,
                                    work=work)
    client = login(personas.member)
    page = client.get(f"/models/{zoo_model.pk}/edit/").content.decode()
    assert "1 profile run and 0 planning requests" in page
    refused = client.post(f"/models/{zoo_model.pk}/delete/", follow=True)
    assert "still queued or running" in refused.content.decode()
    assert RegisteredModel.objects.filter(pk=zoo_model.pk).exists()
    Work.objects.filter(pk=work.pk).update(status=Status.SUCCEEDED)
    done = client.post(f"/models/{zoo_model.pk}/delete/")
    assert done.status_code == 302 and done["Location"] == f"/models/project/{personas.project.pk}/"
    assert not RegisteredModel.objects.filter(pk=zoo_model.pk).exists()
    assert not ProfileRun.objects.filter(pk=run.pk).exists()
