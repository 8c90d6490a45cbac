"""Invitation mail: printed on the console in the embedded default, SMTP from EMAIL_*."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
SETTINGS = ("EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_USE_TLS", "INVITATION_DAYS",
            "SIGNUP_OPEN")


def _settings_with(env: dict[str, str]) -> list[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("EMAIL_", "DATABASE_URL", "REDIS_URL", "HETERPS_SIGNUP",
                                  "HETERPS_INVITATION"))}
    code = ("import django; django.setup(); from django.conf import settings as s; "
            f"print(*[getattr(s, n) for n in {SETTINGS!r}], sep='|')")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, text=True,
                         capture_output=True, timeout=60,
                         env=clean | {"DJANGO_SETTINGS_MODULE": "webapp.settings"} | env)
    return out.stdout.strip().splitlines()[-1].split("|")


@pytest.mark.slow  # a fresh interpreter loads the settings: ~10 s
def test_the_embedded_default_prints_mail_and_keeps_sign_up_closed() -> None:
    backend, host, _, _, days, signup = _settings_with({})
    assert backend == "django.core.mail.backends.console.EmailBackend" and host == ""
    assert days == "7" and signup == "False"


@pytest.mark.slow
def test_email_variables_select_smtp() -> None:
    backend, host, port, tls, _, signup = _settings_with(
        {"EMAIL_HOST": "smtp.example.com", "EMAIL_PORT": "587", "EMAIL_USE_TLS": "1",
         "HETERPS_SIGNUP": "1"})
    assert backend == "django.core.mail.backends.smtp.EmailBackend"
    assert (host, port, tls, signup) == ("smtp.example.com", "587", "True", "True")


@pytest.mark.django_db
def test_the_console_backend_prints_the_link(personas: Any, settings: Any,
                                             capsys: Any) -> None:
    from webapp.projects import services

    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    invited = services.invite(personas.owner, personas.project, "c@example.com", "member",
                              lambda t: f"http://127.0.0.1:8000/projects/join/?token={t}")
    printed = capsys.readouterr().out
    assert invited.mailed_to == "c@example.com"
    assert invited.link in printed and "To: c@example.com" in printed
