"""`heterps --server URL --token T ...` against a real server (pytest-django's live server):
jobs, cancel, costs, and clear one-line errors for a bad token, an outsider, no server."""

from __future__ import annotations

from typing import Any

import pytest

from heterps_core.cli import main
from heterps_core.cli.remote import wants_server

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def job(personas: Any) -> Any:
    from webapp.jobs import samples, services

    source = services.PlanSource(project=personas.project, plan=samples.ctr_plan(),
                                 model_name=samples.MODEL, model_size=samples.SIZE,
                                 batch_size=samples.BATCH, scheduler="greedy", name="ctr-run")
    return services.approve(personas.member, source, services.RunOptions(steps=8))


def _token(user: Any) -> str:
    from rest_framework.authtoken.models import Token

    return Token.objects.create(user=user).key


def _remote(live_server: Any, token: str, *args: str) -> list[str]:
    return ["--server", live_server.url, "--token", token, *args]


def test_listing_showing_and_cancelling_jobs(live_server: Any, personas: Any, job: Any,
                                             capsys: Any) -> None:
    token = _token(personas.member)
    assert main(_remote(live_server, token, "jobs")) == 0
    table = capsys.readouterr().out
    assert "$/hour (estimate)" in table and f"{job.pk}" in table and "ctr-run" in table
    assert main(_remote(live_server, token, "cancel", str(job.pk))) == 0
    assert "cancelled" in capsys.readouterr().out
    assert main(_remote(live_server, token, "--json", "job", str(job.pk))) == 0
    assert '"status": "cancelled"' in capsys.readouterr().out


def test_the_cost_report(live_server: Any, personas: Any, job: Any, capsys: Any) -> None:
    assert main(_remote(live_server, _token(personas.viewer), "costs")) == 0
    out = capsys.readouterr().out
    assert "estimate" in out and "accrued" in out and "ctr-run" in out


def test_errors_are_one_line_naming_the_problem(live_server: Any, personas: Any, job: Any,
                                                capsys: Any) -> None:
    cases = [
        (_remote(live_server, "not-a-token", "jobs"), "refused the token"),
        (_remote(live_server, _token(personas.outsider), "job", str(job.pk)), "404"),
        (_remote(live_server, _token(personas.viewer), "cancel", str(job.pk)), "403"),
        (["--server", "http://127.0.0.1:9", "--token", "t", "jobs"], "cannot reach"),
        (["--server", "ftp://x", "--token", "t", "jobs"], "--server"),
    ]
    for argv, words in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error:" in err and words in err, err


def test_without_server_the_local_commands_are_untouched() -> None:
    assert not wants_server(["plan", "instance.json", "--server", "x"])
    assert wants_server(["--server=http://h", "jobs"])
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "--help"])
    assert exit_.value.code == 0
