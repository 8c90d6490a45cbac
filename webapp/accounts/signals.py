"""A password change revokes every API token of the user: whoever knew the old password may
have made one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver

User = get_user_model()


@receiver(pre_save, sender=User)
def _note_password_change(sender: Any, instance: Any, **kwargs: Any) -> None:
    if instance.pk is None:
        return
    old = sender.objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    instance._heterps_password_changed = old is not None and old != instance.password


@receiver(post_save, sender=User)
def _revoke_on_password_change(sender: Any, instance: Any, **kwargs: Any) -> None:
    if getattr(instance, "_heterps_password_changed", False):
        from webapp.accounts.services import revoke_all

        revoke_all(instance)
        instance._heterps_password_changed = False
