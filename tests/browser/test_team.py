"""Issue 25 item 1's acceptance in a real browser: an owner creates a project and invites a
member by e-mail (the mail backend's outbox holds the link), the member accepts, plans and
runs a job; the owner makes them a viewer and the viewer's next write is refused (403).
On the ASGI server, embedded or with DATABASE_URL/REDIS_URL. The team page is shot at 1280
and 390 px into docs/screenshots/ (people look at them)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
BATCH = 64


def _seed(project: Any, owner: Any) -> None:
    """What the owner set up before inviting anyone: a CPU type and a profiled tiny CTR-DNN
    (the member journey does these in the browser; here the team is the subject)."""
    from heterps_core.profiler import ProfileOptions, profile_zoo_model
    from webapp.catalogue.models import ResourceType
    from webapp.modelzoo.services import add_zoo_model
    from webapp.profiling.models import ProfileRun
    from webapp.profiling.services import record_profile

    ResourceType.objects.create(project=project, name="cpu-local", kind="cpu",
                                price_per_hour=0.05, count=8, memory_gb=16, network_gbps=10)
    model = add_zoo_model(owner, project, "ctr_dnn", "tiny")
    run = ProfileRun.objects.create(project=project, model=model, batch_size=BATCH)
    record_profile(run.pk, profile_zoo_model(
        "ctr_dnn", ProfileOptions(threads=1, warmup=0, repeats=1), size="tiny",
        batch_size=BATCH))


def _sign_in(page: Any, user: Any, base_url: str) -> None:
    """A session of its own per person (the shared `sign_in` fixture's one test client
    would end the owner's session when it signs the member in)."""
    from urllib.parse import urlsplit

    from django.test import Client

    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "domain": urlsplit(base_url).hostname, "path": "/"}])


def test_an_owner_invites_a_member_who_runs_a_job_then_becomes_a_viewer(
    browser: Any, page: Any, shoot: Any, asgi_url: str, django_user_model: Any, worker: Any,
    compare: Any, settings: Any, tmp_path: Path, reloaded: Any,
) -> None:
    from django.core import mail

    from webapp.background.models import FINISHED
    from webapp.jobs.models import Job
    from webapp.projects.models import Membership, Project

    settings.VAR_DIR = tmp_path
    url = asgi_url
    olga = django_user_model.objects.create_user("olga", email="olga@example.com")
    mo = django_user_model.objects.create_user("mo", email="mo@example.com")
    mail.outbox = []

    # The owner creates a project and invites mo by e-mail.
    _sign_in(page, olga, url)
    page.goto(f"{url}/projects/new/")
    page.fill("#id_name", "Team CTR")
    page.click("main button[type=submit]")
    page.wait_for_url(re.compile(r".*/projects/\d+/$"))
    project = Project.objects.get(name="Team CTR")
    _seed(project, olga)
    page.click(".next-steps >> text=Team")
    page.wait_for_url(f"{url}/projects/{project.pk}/team/")
    page.fill("#id_who", "olga")  # an existing member: refused, naming the field
    page.click("#invite button[type=submit]")
    assert "Username or e-mail address: olga is already an owner" in page.inner_text("#invite")
    page.fill("#id_who", "mo@example.com")
    page.select_option("#id_role", "member")
    page.click("#invite button[type=submit]")
    assert "Mailed to mo@example.com" in page.inner_text("#invited")
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["mo@example.com"]
    link = re.search(r"https?://\S+/projects/join/\?token=\S+", mail.outbox[0].body)
    assert link, mail.outbox[0].body
    page.fill("#id_who", "dee@example.com")  # stays pending (the screenshot shows one)
    page.select_option("#id_role", "viewer")
    page.click("#invite button[type=submit]")

    # mo follows the link from the mail, signed in, and accepts.
    member = browser.new_context(viewport={"width": 1280, "height": 800})
    mine = member.new_page()
    _sign_in(mine, mo, url)
    mine.goto(link.group(0))
    assert "Team CTR" in mine.inner_text("main") and "as member" in mine.inner_text("main")
    shoot(mine, "invitation-accept")
    mine.click("main button[type=submit]")
    mine.wait_for_url(f"{url}/projects/{project.pk}/")
    assert Membership.objects.get(project=project, user=mo).role == "member"
    again = mine.goto(link.group(0))
    assert again is not None and again.status == 400  # a link works once
    assert "already been used" in mine.inner_text("main")

    # mo plans (a cluster of the CPU type, exact) and runs the chosen plan.
    mine.goto(f"{url}/planning/project/{project.pk}/")
    mine.fill("#cluster-form #id_name", "cpus")
    for box in mine.locator("#cluster-form input[type=checkbox]").all():
        box.check()
    mine.click("#cluster-form button[type=submit]")
    mine.wait_for_url(f"{url}/planning/project/{project.pk}/")
    mine.select_option("#plan-form #id_model", label="ctr_dnn-tiny")
    mine.select_option("#plan-form #id_cluster", label="cpus")
    mine.fill("#plan-form #id_throughput_target", "100")
    chosen = compare(mine, ["exact"])
    chosen.locator("a").first.click()
    mine.wait_for_url("**/planning/result/*/")
    mine.click("#approve-form button[type=submit]")
    mine.wait_for_url("**/jobs/approve/*/")
    mine.fill("#id_steps", "20")
    mine.click("#approve-options button[type=submit]")
    mine.wait_for_url(re.compile(r".*/jobs/\d+/$"))
    job = Job.objects.select_related("work").get(project=project)
    assert job.work.created_by == mo
    deadline = time.monotonic() + 240
    while job.work.status not in FINISHED:
        assert time.monotonic() < deadline, (job.work.status, mine.inner_text("main")[:2000])
        time.sleep(1)
        job.work.refresh_from_db()
    reloaded(mine)  # the page may be reloading itself: it does when the run finishes
    assert mine.inner_text("[data-field=status]").strip() == "succeeded", \
        (job.work.error, mine.inner_text("main")[:2000])

    # mo opens the plan form again; meanwhile the owner makes mo a viewer.
    mine.goto(f"{url}/planning/project/{project.pk}/")
    mine.select_option("#plan-form #id_model", label="ctr_dnn-tiny")
    mine.select_option("#plan-form #id_cluster", label="cpus")
    mine.fill("#plan-form #id_throughput_target", "200")
    page.goto(f"{url}/projects/{project.pk}/team/")
    row = page.locator("#members li[data-member='mo']")
    row.locator("select").select_option("viewer")
    row.locator("button:has-text('Change role')").click()
    page.wait_for_url(f"{url}/projects/{project.pk}/team/")
    assert "mo is now viewer" in page.inner_text(".messages")
    assert Membership.objects.get(project=project, user=mo).role == "viewer"
    shoot(page, "team")

    # The viewer's next write (the form loaded while a member) is refused.
    with mine.expect_response(lambda r: r.request.method == "POST") as answer:
        mine.click("#plan-form button[type=submit]")
    assert answer.value.status == 403
    mine.goto(f"{url}/projects/{project.pk}/team/")
    text = mine.inner_text("main")
    assert "Send invitation" not in text and "mo@example.com" not in text
    shoot(mine, "team-as-viewer")
    member.close()
