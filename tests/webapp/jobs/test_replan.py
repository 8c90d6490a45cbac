"""The closed loop on a real tiny run: a plan made by the planner (its T4 stage bound to this
CPU) runs, its stage times are stored as a measured profile with provenance, and the job
page's re-plan with measured numbers makes a new planning request from them (members only).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import PermissionDenied

from heterps_core.instance import Instance
from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.jobs import accrual, measured, replan, services
from webapp.jobs.models import Job, JobMetric, MeasuredStage, Replan
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


def split_target(model: Any, cluster: Any, batch_size: int) -> float:
    """A throughput target at which the exact plan on this profile uses both the cheap CPU
    type and the T4 (the profile is measured here, so the target is found, not fixed)."""
    from heterps_core.schedulers.exact import exact_plan
    from webapp.planning.services import build_request_instance

    instance, _, _ = build_request_instance(model, cluster, batch_size, 1.0, None)
    target = 1_000.0
    while target < 1e8:
        plan = exact_plan(instance.with_target(target))
        if plan.feasible and {s.resource for s in plan.stages} == {"cpu-local", "t4"}:
            return target
        target *= 1.2
    raise AssertionError("no target makes the planner split the chain between the types")


@pytest.fixture
def planned(personas: Any, profiled: Any, catalogue: list[Any],
            monkeypatch: pytest.MonkeyPatch) -> Any:
    """The chosen result of a solved planning request on a cluster of a cheap CPU type and
    the T4. The CPU type's figures are measured on this machine (by its agent's task body,
    as a worker here runs it): a run here then measures it like with like (issue 23)."""
    from webapp.catalogue.models import ResourceType
    from webapp.planning import services as planning
    from webapp.profiling import remote
    from webapp.profiling.models import Origin, ResourceProfile

    # Enough units that a split beats the T4 alone at some target (measured figures).
    cheap = ResourceType.objects.create(project=personas.project, name="cpu-local",
                                        kind="cpu", price_per_hour=0.05, count=8,
                                        memory_gb=16, network_gbps=10)
    monkeypatch.setenv(remote.THREADS_VARIABLE, "1")
    origin = ResourceProfile.objects.create(run=profiled, resource_type=cheap,
                                            resource="cpu-local", queue="heterps.res.cpu-local",
                                            origin=Origin.WAITING)
    assert remote.measure_here(profiled.pk, origin.pk)["status"] == "measured"
    t4 = next(r for r in catalogue if r.name == "t4")
    cluster = planning.create_cluster(personas.member, personas.project, "cheap", [cheap, t4])
    target = split_target(profiled.model, cluster, profiled.batch_size)
    request = planning.start_planning(personas.member, profiled.model, cluster, target,
                                      ["exact"], batch_size=profiled.batch_size)
    work_services.run_work(request.work_id)
    chosen = request.results.get(chosen=True)
    assert {s["resource"] for s in chosen.plan["stages"]} == {"cpu-local", "t4"}, chosen.plan
    return chosen


@pytest.fixture
def ran(personas: Any, planned: Any) -> Job:
    from heterps_core.runtime.compile import whole_steps

    steps = whole_steps([s["units"] for s in planned.plan["stages"]])  # whole rounds
    job = services.approve_plan(personas.member, planned,
                                RunOptions(steps=steps, binding={"t4": "cpu"}))
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work", "project").get(pk=job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    return job


@pytest.mark.slow
def test_measured_profile_stored_and_used_by_the_next_plan(
    login: Any, personas: Any, planned: Any, ran: Job
) -> None:
    job = ran
    stored = measured.for_run(job)
    summary = {s["stage"]: s for s in job.summary["stages"]}
    assert [e.stage for e in stored] == sorted(summary)
    for entry in stored:
        assert entry.final and entry.provenance == f"measured in job {job.pk}, run 1"
        assert entry.measured_time_per_batch_s == pytest.approx(
            summary[entry.stage]["measured_time_per_batch_s"])
        assert entry.substitute == (entry.resource == "t4")

    # Its accrued cost per stage, at the prices of the instance the plan was solved on.
    run = accrual.run_accrual(job, services.metrics_series(job))
    assert run is not None and "solved on" in run["price_source"]
    price = {r["name"]: r["price_per_hour"] for r in planned.request.instance["resources"]}
    assert all(r["price_per_hour"] == price[r["resource"]] for r in run["rows"])
    assert run["accrued"] == pytest.approx(job.summary["cost"], rel=1e-6)

    # The what-if: every correction is of the plan's CPU type (the T4 ran on this CPU, so
    # its own figures stay the estimate), from this run's measured numbers.
    offer = replan.offer(job)
    assert offer.what_if is not None
    corrections = offer.what_if["corrections"]
    assert corrections and {c["resource"] for c in corrections} == {"cpu-local"}
    by_stage = {e.stage: e for e in stored}
    for c in corrections:
        entry = by_stage[c["stage"]]
        assert c["measured_ms"] == pytest.approx(1000 * entry.measured_time_per_batch_s)
        assert f"measured in job {job.pk}, run 1" in c["provenance"]
    differs = any(abs(c["difference_pct"]) > 100 * measured.threshold() for c in corrections)
    assert offer.available == differs
    if not offer.available:
        pytest.skip("this run measured within the threshold of every prediction: no offer")
    what_if = offer.what_if
    # Cheaper-or-honest: the exact plan on the measured numbers never costs more than the
    # job's own stages re-provisioned with them.
    if what_if["current_measured"]["feasible"]:
        assert (what_if["replanned"]["cost_per_hour"]
                <= what_if["current_measured"]["cost_per_hour"] + 1e-9)
    assert what_if["difference"]["cost_per_hour"] == pytest.approx(
        what_if["replanned"]["cost_per_hour"] - what_if["current"]["cost_per_hour"])

    page = login(personas.viewer).get(f"/jobs/{job.pk}/").content.decode()
    assert "Re-plan with measured numbers" in page and 'id="corrections"' in page
    assert 'id="replan-button"' not in page  # a viewer sees the what-if, not the button
    assert "Members and owners can re-plan" in page

    # A viewer and an outsider cannot make the request (page and service).
    assert login(personas.viewer).post(f"/jobs/{job.pk}/replan/").status_code == 403
    assert login(personas.outsider).post(f"/jobs/{job.pk}/replan/").status_code == 404
    with pytest.raises(PermissionDenied):
        replan.replan(personas.viewer, job)
    assert not Replan.objects.exists()

    # A member's one click: a new planning request whose instance has the measured numbers,
    # under the caps the job's request had (a cap far above this plan: it changes nothing).
    planned.request.__class__.objects.filter(pk=planned.request_id).update(
        max_hourly_cost=1000.0)
    member = login(personas.member)
    assert 'id="replan-button"' in member.get(f"/jobs/{job.pk}/").content.decode()
    response = member.post(f"/jobs/{job.pk}/replan/")
    assert response.status_code == 302
    link = Replan.objects.get(job=job)
    assert response["Location"] == f"/planning/{link.request_id}/"
    new = planned.request.__class__.objects.get(pk=link.request_id)
    assert new.model_id == planned.request.model_id and new.cluster_id == planned.request.cluster_id
    assert (new.max_hourly_cost, new.max_total_cost) == (1000.0, None)
    before, after = Instance.from_dict(planned.request.instance), Instance.from_dict(new.instance)
    labelled = [f for f in new.provenance if f["source"] == "measured"]
    assert labelled and all(f"measured in job {job.pk}, run 1" in f["device"] for f in labelled)
    for f in labelled:
        i = next(k for k, layer in enumerate(after.layers) if layer.name == f["layer"])
        assert after.layers[i].compute_s[f["resource"]] == pytest.approx(f["seconds"])
        assert after.layers[i].compute_s[f["resource"]] != before.layers[i].compute_s[
            f["resource"]]
    untouched = {(f["layer"], f["resource"]) for f in new.provenance if f["source"] != "measured"}
    for i, layer in enumerate(after.layers):
        for resource, seconds in layer.compute_s.items():
            if (layer.name, resource) in untouched:
                assert seconds == before.layers[i].compute_s[resource]
    work_services.run_work(new.work_id)
    chosen = new.results.get(chosen=True)
    assert chosen.cost_per_hour == pytest.approx(what_if["replanned"]["cost_per_hour"])
    shown = replan.replans(job)[0]
    assert shown["difference"]["cost_per_hour"] == pytest.approx(
        chosen.cost_per_hour - job.predicted_cost_per_hour)
    page = member.get(f"/jobs/{job.pk}/").content.decode()
    assert f"planning request #{new.pk}" in page and "per hour (estimate)" in page

    # A restart keeps what run 1 measured (the model page still lists it).
    services.restart(personas.member, job)
    rows = measured.for_model(job.project_id, job.model_name, job.model_size)
    assert {r["provenance"] for r in rows} == {f"measured in job {job.pk}, run 1"}


@pytest.mark.slow
def test_the_api_offers_and_makes_the_replan_for_members_only(
    login: Any, personas: Any, ran: Job
) -> None:
    url = f"/api/jobs/{ran.pk}/replan/"
    shown = login(personas.viewer).get(url)
    assert shown.status_code == 200
    offer = shown.json()
    assert offer["available"] == replan.offer(ran).available and "what_if" in offer
    assert login(personas.outsider).get(url).status_code == 404
    assert login(personas.viewer).post(url).status_code == 403
    assert login(personas.outsider).post(url).status_code == 404
    assert not Replan.objects.exists()
    made = login(personas.member).post(url)
    if not offer["available"]:
        assert made.status_code == 400 and offer["reason"] in str(made.json()["replan"])
        return
    assert made.status_code == 201
    link = Replan.objects.get(job=ran)
    assert made.json()["planning_request"] == link.request_id
    assert made.json()["url"].endswith(f"/api/planning-requests/{link.request_id}/")


@pytest.mark.slow
def test_live_samples_update_the_profile_but_never_a_final_one(personas: Any, ran: Job) -> None:
    job = ran
    last = JobMetric.objects.filter(job=job, run=1).order_by("-elapsed_s").first()
    assert last is not None
    sample = {"step": last.step, "stages": last.stages}
    measured.record_sample(job, 2, sample)  # as a second run's sample would
    live = MeasuredStage.objects.filter(job=job, run=2)
    assert live.count() == len(last.stages) and not any(e.final for e in live)
    assert live.first().provenance.endswith(f"(live, at step {last.step})")
    finals = {e.stage: e.measured_time_per_batch_s for e in measured.for_run(job, 1)}
    measured.record_sample(job, 1, {"step": 1, "stages": [
        {**s, "time_per_batch_s": 123.0} for s in last.stages]})
    assert {e.stage: e.measured_time_per_batch_s for e in measured.for_run(job, 1)} == finals


def test_no_offer_without_a_planning_request(personas: Any, source: Any) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=8), start=False)
    offer = replan.offer(job)
    assert not offer.available and "not made by a planning request" in offer.reason


@pytest.mark.parametrize(("raw", "expected"), [(None, 0.15), ("", 0.15), ("0.3", 0.3)])
def test_the_threshold_is_a_setting(raw: str | None, expected: float) -> None:
    env = {} if raw is None else {"HETERPS_MEASURED_THRESHOLD": raw}
    assert measured.threshold_from(env) == expected


@pytest.mark.parametrize("raw", ["15%", "0", "-1", "nan"])
def test_a_bad_threshold_names_the_variable(raw: str) -> None:
    from webapp.environment import SettingsError

    with pytest.raises(SettingsError) as bad:
        measured.threshold_from({"HETERPS_MEASURED_THRESHOLD": raw})
    assert "HETERPS_MEASURED_THRESHOLD" in str(bad.value)
