"""First-run set-up shared by `manage.py up` and `manage.py load_demo`."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db import transaction

if TYPE_CHECKING:
    from django.contrib.auth.models import User

ADMIN_USERNAME = "admin"


@transaction.atomic
def ensure_admin() -> tuple[User, str | None]:
    """The admin account, created once. Returns the new random password the first time
    (the caller prints it once; it is not stored anywhere in clear), else None."""
    User = get_user_model()
    existing = User.objects.filter(is_superuser=True).order_by("id").first()
    if existing is not None:
        return existing, None
    password = secrets.token_urlsafe(12)
    admin = User.objects.create_superuser(ADMIN_USERNAME, email="", password=password)
    return admin, password
