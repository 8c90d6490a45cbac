"""The first admin's password goes to a person at a terminal only (issue 25.11): output to
a file or a log (`manage.py load_demo > setup.log`) says how to set one instead."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from webapp.ops.demo import admin_notice

pytestmark = pytest.mark.django_db


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_never_gets_the_password() -> None:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    text = out.getvalue()
    admin = get_user_model().objects.get(is_superuser=True)
    assert "manage.py changepassword admin" in text and "Password:" not in text
    assert "password is not printed" in text
    # Nothing printed is the password: no printed word signs the admin in.
    assert not any(admin.check_password(word.strip(".'`")) for word in text.split())


def test_a_terminal_gets_it_once_with_how_to_change_it() -> None:
    out = Terminal()
    call_command("load_demo", stdout=out)
    first = out.getvalue()
    password = first.split("Password: ")[1].split()[0]
    assert get_user_model().objects.get(is_superuser=True).check_password(password)
    assert "changepassword admin" in first
    again = Terminal()
    call_command("load_demo", stdout=again)
    assert "Password" not in again.getvalue()


def test_the_notice_reads_the_stream() -> None:
    assert "s3cret" in admin_notice("admin", "s3cret", Terminal())
    assert "s3cret" not in admin_notice("admin", "s3cret", io.StringIO())
    assert "s3cret" not in admin_notice("admin", "s3cret", object())


def test_manage_py_up_into_a_log_keeps_no_password(tmp_path) -> None:
    """The real `manage.py up` of the embedded default, its output in a file (a service
    manager's log): it creates the admin and says how to set a password."""
    import os
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["HETERPS_VAR_DIR"] = str(tmp_path / "var")
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "manage.py", "up", "--no-demo", "--port",
                                   str(port)], cwd=root, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "admin account" not in log.read_text() and time.monotonic() < deadline:
            assert server.poll() is None, log.read_text()
            time.sleep(0.5)
    finally:
        os.killpg(server.pid, 15)
        server.wait(30)
    text = log.read_text()
    assert "Created the admin account 'admin'" in text, text
    assert "Password:" not in text and "manage.py changepassword admin" in text
