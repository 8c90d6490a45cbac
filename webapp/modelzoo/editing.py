"""Editing and deleting a registered model from the pages (issue 25.11: only the Django
admin could). What identifies the model's code (its zoo entry, factory, size, layers) stays
as it was registered: a new model is a new registration. Deleting it deletes its profiles
and planning requests (and their results); jobs keep their own copy of the plan they ran.
Refused while any of its profiles or plans is still being worked on."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from webapp.background.models import Status
from webapp.modelzoo.models import RegisteredModel
from webapp.projects.permissions import Action, AnyUser, check

BUSY = (Status.QUEUED, Status.RUNNING, Status.CANCELLING)


def update_model(user: AnyUser, model: RegisteredModel, name: str, description: str,
                 default_batch_size: int) -> RegisteredModel:
    check(user, model.project_id, Action.EDIT)
    name = name.strip()
    if not name:
        raise ValidationError({"name": "must not be empty"})
    with transaction.atomic():
        taken = RegisteredModel.objects.filter(project_id=model.project_id, name=name).exclude(
            pk=model.pk).exists()
        if taken:
            raise ValidationError({"name": f"a model called {name!r} already exists in this "
                                           "project"})
        RegisteredModel.objects.filter(pk=model.pk).update(
            name=name, description=description.strip(), default_batch_size=default_batch_size)
    model.refresh_from_db()
    return model


def what_goes(model: RegisteredModel) -> dict[str, int]:
    """What deleting the model deletes with it."""
    return {"profiles": model.profiles.count(), "plans": model.plans.count()}


def delete_model(user: AnyUser, model: RegisteredModel) -> None:
    check(user, model.project_id, Action.EDIT)
    with transaction.atomic():
        locked = RegisteredModel.objects.select_for_update().get(pk=model.pk)
        busy = (locked.profiles.filter(work__status__in=BUSY).count()
                + locked.plans.filter(work__status__in=BUSY).count())
        if busy:
            raise ValidationError({"model": (
                f"{busy} of its profile or planning runs {'is' if busy == 1 else 'are'} still "
                "queued or running: cancel or wait for them, then delete it")})
        locked.delete()
