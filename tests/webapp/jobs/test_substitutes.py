"""Like with like by provenance, never by names (issue 23, item 7), on real tiny runs a plain
member makes: a type created from the hardware catalogue's `cpu-c6i.8xlarge` and renamed
`c6i`, bound to this CPU, is a substitute (its figures are the roofline for a c6i); a type
whose figures an agent measured on this machine, bound to this CPU, ran on its own hardware.
"""

from __future__ import annotations

from typing import Any

import pytest

from heterps_core.provenance import Tier
from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.jobs import figures, measured, replan, services
from webapp.jobs.models import Job, MeasuredStage
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db
TARGET = 10.0  # samples/s: one unit of any CPU type reaches it


def _type(member: Any, project: Any, data: dict[str, Any]) -> Any:
    from webapp.catalogue import services as catalogue

    return catalogue.create(member, project, data)


def _planned_on(personas: Any, profiled: Any, resource_type: Any) -> Any:
    """The chosen result of a solved planning request on a cluster of that one type."""
    from webapp.planning import services as planning

    cluster = planning.create_cluster(personas.member, personas.project,
                                      f"only {resource_type.name}", [resource_type])
    request = planning.start_planning(personas.member, profiled.model, cluster, TARGET,
                                      ["exact"], batch_size=profiled.batch_size)
    work_services.run_work(request.work_id)
    return request.results.get(chosen=True)


def _ran(personas: Any, chosen: Any, name: str) -> Job:
    job = services.approve_plan(personas.member, chosen,
                                RunOptions(steps=16, binding={name: "cpu"}))
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work", "project").get(pk=job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    return job


@pytest.mark.slow
def test_a_catalogue_type_renamed_and_bound_to_this_cpu_is_a_substitute(
    login: Any, personas: Any, profiled: Any, catalogue: Any
) -> None:
    c6i = _type(personas.member, personas.project,
                {"template": "cpu-c6i.8xlarge", "name": "c6i"})
    chosen = _planned_on(personas, profiled, c6i)
    job = _ran(personas, chosen, "c6i")

    stages = job.summary["stages"]
    assert stages and all(s["resource"] == "c6i" and s["substitute"] for s in stages)
    member = login(personas.member)
    page = member.get(f"/jobs/{job.pk}/").content.decode()
    assert "Ran on a substitute: stage 1 (c6i) ran on cpu" in page
    assert "Prediction error (vs predicted for what ran)" in page
    assert 'id="stages-off"' not in page  # no "% miss" against hardware that did not run
    assert "(same hardware)</span>" not in page
    assert 'id="replan-button"' not in page

    # Nothing stored as measured for the c6i: its rows say they are not comparable.
    rows = MeasuredStage.objects.filter(job=job)
    assert rows and all(r.substitute for r in rows)
    model_page = member.get(f"/models/{profiled.model.pk}/").content.decode()
    assert "not comparable (ran on a substitute)" in model_page
    assert "differs by more than" not in model_page
    assert not any(r["differs"] for r in measured.stage_rows(job))

    # No re-plan built on it, and its start-up is no restart time of a c6i (issue 26.1).
    offer = replan.offer(job)
    assert not offer.available and "substitute" in offer.reason
    assert not c6i.restart_samples.exists()
    assert c6i.restart().source == "assumed"
    assert member.post(f"/jobs/{job.pk}/replan/").status_code == 302
    assert not job.replans.exists()


@pytest.mark.slow
def test_a_type_an_agent_measured_on_this_machine_ran_on_its_own_hardware(
    login: Any, personas: Any, profiled: Any, catalogue: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webapp.profiling import remote
    from webapp.profiling.models import Origin, ResourceProfile

    box = _type(personas.member, personas.project,
                {"name": "box", "kind": "cpu", "price_per_hour": 0.1, "count": 2,
                 "memory_gb": 16, "network_gbps": 10})
    # The agent task's body, as a worker on this machine runs it for the type's queue.
    monkeypatch.setenv(remote.THREADS_VARIABLE, "1")
    origin = ResourceProfile.objects.create(run=profiled, resource_type=box, resource="box",
                                            queue="heterps.res.box", origin=Origin.WAITING)
    assert remote.measure_here(profiled.pk, origin.pk)["status"] == "measured"
    chosen = _planned_on(personas, profiled, box)
    job = _ran(personas, chosen, "box")

    record = figures.figure_tiers(job)["box"]
    assert record.tier is Tier.AGENT and record.host  # measured by the agent, and where
    stages = job.summary["stages"]
    assert stages and not any(s["substitute"] for s in stages)
    assert all(s["host"] == record.host for s in stages)

    page = login(personas.member).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="substitute-banner"' not in page
    assert "(same hardware)</span>" in page and "(substitute)" not in page
    assert "Prediction error (vs plan estimate)" in page
    rows = MeasuredStage.objects.filter(job=job)
    assert rows and not any(r.substitute for r in rows)
    assert all(r.host == record.host for r in rows)
    # Its start-up is the box's measured restart time (issue 26.1), with where it comes from.
    box.refresh_from_db()
    restart = box.restart()
    assert restart.source == "measured"
    assert restart.seconds == pytest.approx(job.summary["startup_s"])
    assert f"job {job.pk} run 1" in restart.label
    api = login(personas.member).get(f"/api/resource-types/{box.pk}/").json()
    assert api["restart"]["source"] == "measured" and api["restart_s"] is None
    # The re-plan's what-if is built on it: corrections of the box's own figures.
    offer = replan.offer(job)
    assert offer.what_if is not None
    assert {c["resource"] for c in offer.what_if["corrections"]} == {"box"}
