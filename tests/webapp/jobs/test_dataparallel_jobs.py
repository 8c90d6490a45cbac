"""Data-parallel jobs: the sync mode and its parameters chosen on approval, a real short
data-parallel run (emulated backend, tiny model) storing per-worker samples, the job page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from heterps_core.dataparallel import modes
from webapp.background import services as work_services
from webapp.background.models import Status
from webapp.jobs import services
from webapp.jobs.models import Job, JobMetric, Runner
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


def _post(mode: str, **params: Any) -> dict[str, Any]:
    data = {"runner": "dataparallel", "steps": 30, "lr": 0.05, "dp_mode": mode,
            "dp_workers": 3, "dp_slowdowns": "1,1,4", "dp_backend": "emulated",
            "sync_mode": "bsp", "bind_cpu": "cpu", "bind_cpu-b": "cpu"}
    data.update({f"dp_{mode}__{name}": value for name, value in params.items()})
    return data


def test_the_form_offers_every_mode_with_a_field_per_parameter(
    login: Any, personas: Any, plan_result: Any
) -> None:
    page = login(personas.member).get(f"/jobs/approve/{plan_result.pk}/").content.decode()
    for schema in modes.schemas():
        assert f'<option value="{schema["name"]}"' in page, schema["name"]
        for param in schema["params"]["properties"]:
            assert f'name="dp_{schema["name"]}__{param}"' in page, param
    assert 'name="dp_slowdowns"' in page and "emulation" in page
    assert 'value="process"' in page and 'value="emulated"' in page
    assert 'name="bind_cpu-b"' in page  # the pipeline path is still there


@pytest.mark.parametrize("schema", modes.schemas(), ids=lambda s: s["name"])
def test_approving_with_each_modes_parameters_stores_them_coerced(
    login: Any, personas: Any, plan_result: Any, schema: dict[str, Any]
) -> None:
    # Every parameter set to a value other than its default, posted as the browser posts.
    posted, expected = {}, {}
    for name, spec in schema["params"]["properties"].items():
        if spec["type"] == "boolean":
            posted[name], expected[name] = "", False  # an unchecked box posts nothing
            continue
        value = spec.get("minimum", 0) + 1 if spec["type"] == "integer" else 0.5
        posted[name] = str(value)
        expected[name] = value
    done = login(personas.member).post(f"/jobs/approve/{plan_result.pk}/",
                                       _post(schema["name"], **posted))
    job = Job.objects.get()
    assert done.status_code == 302 and done["Location"] == f"/jobs/{job.pk}/"
    assert (job.runner, job.sync_mode) == (Runner.DATAPARALLEL, schema["name"])
    assert job.sync_params == expected
    assert job.dataparallel == {"workers": 3, "slowdowns": [1.0, 1.0, 4.0],
                                "backend": "emulated"}
    assert job.work is not None and job.work.kind == services.RUN_KIND


@pytest.mark.parametrize(("mode", "param", "value", "problem"), [
    ("ssp", "staleness", "-1", "must be >= 0"),
    ("ashl", "topk_ratio", "2", "must be <= 1.0"),
    ("local_sgd", "period", "two", "must be an integer"),
])
def test_a_bad_parameter_is_marked_on_its_field(
    login: Any, personas: Any, plan_result: Any, mode: str, param: str, value: str,
    problem: str,
) -> None:
    bad = login(personas.member).post(f"/jobs/approve/{plan_result.pk}/",
                                      _post(mode, **{param: value}))
    assert bad.status_code == 400
    errors = bad.context["form"].errors
    assert list(errors) == [f"dp_{mode}__{param}"]
    assert problem in errors[f"dp_{mode}__{param}"][0]
    assert not Job.objects.exists()


def test_bad_workers_settings_are_marked_on_their_fields(
    login: Any, personas: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    wrong_count = client.post(f"/jobs/approve/{plan_result.pk}/",
                              dict(_post("asp"), dp_slowdowns="1,4"))
    assert wrong_count.status_code == 400
    assert "one factor per worker (3), got 2" in wrong_count.context["form"].errors[
        "dp_slowdowns"][0]
    not_numbers = client.post(f"/jobs/approve/{plan_result.pk}/",
                              dict(_post("asp"), dp_slowdowns="1,x,4"))
    assert "numbers separated by commas" in not_numbers.context["form"].errors[
        "dp_slowdowns"][0]
    negative = client.post(f"/jobs/approve/{plan_result.pk}/",
                           dict(_post("asp"), dp_slowdowns="1,-1,4"))
    assert "must be > 0" in negative.context["form"].errors["dp_slowdowns"][0]


def test_the_service_names_the_cores_field(personas: Any, source: Any) -> None:
    options = RunOptions(steps=10, runner=Runner.DATAPARALLEL, sync_mode="ssp",
                         sync_params={"staleness": -1})
    with pytest.raises(ValidationError) as bad:
        services.approve(personas.member, source, options)
    assert "mode.ssp.staleness" in bad.value.message_dict
    with pytest.raises(ValidationError) as unknown:
        services.approve(personas.member, source, RunOptions(
            steps=10, runner=Runner.DATAPARALLEL, sync_mode="nope"))
    assert "unknown sync mode 'nope'" in unknown.value.message_dict["mode"][0]


@pytest.fixture
def dp_job(personas: Any, source: Any) -> Job:
    """A real ASHL run: 3 workers, the third 4x slower, that switches to SHL mid-run."""
    options = RunOptions(
        steps=90, runner=Runner.DATAPARALLEL, sync_mode="ashl",
        sync_params={"ahl_steps": 4, "plateau_window": 10, "plateau_delta": 0.5},
        dataparallel={"workers": 3, "slowdowns": "1,1,4", "backend": "emulated"},
    )
    job = services.approve(personas.member, source, options)
    work_services.run_work(job.work_id)
    return Job.objects.select_related("work", "project").get(pk=job.pk)


def test_a_real_data_parallel_run_stores_per_worker_samples(dp_job: Job) -> None:
    assert dp_job.work.status == Status.SUCCEEDED, dp_job.work.error
    rows = list(JobMetric.objects.filter(job=dp_job, run=1).order_by("elapsed_s", "step"))
    assert len(rows) >= 10
    assert rows[-1].step == 90 and rows[-1].total_steps == 90
    last = rows[-1].stages
    assert [w["worker"] for w in last] == [0, 1, 2]
    assert [w["slowdown"] for w in last] == [1.0, 1.0, 4.0]
    # The 4x worker's rolling median step time is about 4x the others' (emulated jitter 5%).
    fast = (last[0]["step_time_s"] + last[1]["step_time_s"]) / 2
    assert 3.0 < last[2]["step_time_s"] / fast < 5.0
    assert last[2]["steps"] < last[0]["steps"]
    # ... and it is the one flagged as a straggler, the only one.
    assert any(row.stages[2]["straggler"] for row in rows)
    assert not any(row.stages[0]["straggler"] or row.stages[1]["straggler"] for row in rows)
    # Phases: AHL first, then SHL from the switch, whose time every later sample carries.
    assert rows[0].stages[0]["phase"] == "AHL" and rows[0].stages[0]["switch_s"] is None
    assert {w["phase"] for w in last} == {"SHL"}
    switch_s = last[0]["switch_s"]
    assert switch_s is not None and 0 < switch_s < rows[-1].elapsed_s
    assert last[0]["switch_step"] == dp_job.summary["switch"]["global_step"]
    assert all(w["bytes_sent"] > 0 and w["max_staleness"] >= 0 for w in last)
    assert all(rows[i].elapsed_s <= rows[i + 1].elapsed_s for i in range(len(rows) - 1))
    assert dp_job.summary["switch"]["phase"] == "SHL"
    assert dp_job.summary["steps"] == 90 and dp_job.summary["throughput"] > 0
    assert [w["steps"] for w in dp_job.summary["workers"]] == [w["steps"] for w in last]
    assert dp_job.last_step == 90 and dp_job.last_loss is not None
    assert "AHL -> SHL at" in dp_job.log and "run 1 finished" in dp_job.log


def test_the_job_page_shows_workers_phase_and_stragglers(
    login: Any, personas: Any, dp_job: Job
) -> None:
    page = login(personas.viewer).get(f"/jobs/{dp_job.pk}/").content.decode()
    # A collected static tree serves hashed names (job_dataparallel.<hash>.js)
    assert 'id="chart-step-times"' in page and re.search(r'job_dataparallel(\.\w+)?\.js', page)
    assert re.search(r'data-field="phase">SHL<', page)
    assert "switched to SHL at" in page and "emulated s" in page
    table = page[page.index('<table id="workers">'):page.index("</table>", page.index(
        '<table id="workers">'))]
    assert table.count("<tr") == 4  # header + 3 workers
    assert table.count('class="straggler"') <= 1
    assert 'id="stages"' not in page  # the pipeline's stage table is not shown


def test_outsiders_get_404_for_a_data_parallel_job(
    login: Any, personas: Any, source: Any
) -> None:
    job = services.approve(personas.member, source, RunOptions(
        steps=10, runner=Runner.DATAPARALLEL, sync_mode="bsp"), start=False)
    client = login(personas.outsider)
    for url in (f"/jobs/{job.pk}/", f"/api/jobs/{job.pk}/", f"/api/jobs/{job.pk}/metrics/"):
        assert client.get(url).status_code == 404, url


@pytest.mark.django_db(transaction=True)
async def test_a_viewer_sees_the_data_parallel_samples_live(
    client: Any, personas: Any, source: Any
) -> None:
    """Through the real ASGI app: every stored sample reaches the viewer's websocket after
    its commit, with the per-worker step times, phase and straggler flags."""
    import asyncio

    from asgiref.sync import sync_to_async
    from channels.db import database_sync_to_async
    from channels.testing import WebsocketCommunicator

    from webapp.asgi import application

    job = await database_sync_to_async(services.approve)(personas.member, source, RunOptions(
        steps=60, runner=Runner.DATAPARALLEL, sync_mode="ssp", sync_params={"staleness": 1},
        dataparallel={"workers": 3, "slowdowns": [1, 1, 4]}))
    await client.aforce_login(personas.viewer)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    socket = WebsocketCommunicator(application, f"/ws/jobs/work/{job.work_id}/",
                                   headers=[(b"cookie", cookie), (b"origin", b"http://localhost")])
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=5))["work"]["status"] == "queued"
    # Like the Celery worker: not the thread the consumers' database calls share.
    run = asyncio.create_task(sync_to_async(work_services.run_work, thread_sensitive=False)(
        job.work_id))
    events = []
    while not events or not events[-1]["finished"]:
        events.append((await socket.receive_json_from(timeout=60))["work"])
    await run
    await socket.disconnect()
    assert events[-1]["status"] == "succeeded", events[-1]["error"]
    samples = [e["metrics"] for e in events if "step" in e["metrics"]]
    stored = [(m.step, m.elapsed_s) async for m in JobMetric.objects.filter(job=job)]
    # (the finished event repeats the work's last progress, hence sets)
    assert set(stored) == {(s["step"], s["elapsed_s"]) for s in samples}
    assert samples[-1]["step"] == 60 and samples[-1]["runner"] == "dataparallel"
    assert all(s["phase"] == "ssp" for s in samples)
    workers = samples[-1]["stages"]
    assert [w["worker"] for w in workers] == [0, 1, 2]
    assert workers[2]["step_time_s"] > 3 * workers[0]["step_time_s"]
    assert max(w["max_staleness"] for w in workers) <= 1  # SSP's bound holds


def test_the_api_approves_a_data_parallel_run_and_names_bad_fields(
    login: Any, personas: Any, plan_result: Any
) -> None:
    client = login(personas.member)
    body = {"plan_result": plan_result.pk, "steps": 20, "runner": "dataparallel",
            "sync_mode": "local_sgd", "sync_params": {"period": 0},
            "dataparallel": {"workers": 2, "slowdowns": [1, 3]}}
    bad = client.post("/api/jobs/", body, content_type="application/json")
    assert bad.status_code == 400 and "must be >= 1" in bad.json()["mode.local_sgd.period"][0]
    made = client.post("/api/jobs/", dict(body, sync_params={"period": 5}),
                       content_type="application/json")
    assert made.status_code == 201
    job = made.json()
    assert (job["runner"], job["sync_mode"], job["sync_params"]) == (
        "dataparallel", "local_sgd", {"period": 5})
    assert job["dataparallel"] == {"workers": 2, "slowdowns": [1, 3], "backend": "emulated"}


@pytest.mark.django_db(transaction=True)
async def test_cancelling_from_the_page_stops_the_trainer(
    client: Any, async_client: Any, personas: Any, source: Any
) -> None:
    import asyncio

    from asgiref.sync import sync_to_async
    from channels.db import database_sync_to_async
    from channels.testing import WebsocketCommunicator

    from webapp.asgi import application

    job = await database_sync_to_async(services.approve)(personas.member, source, RunOptions(
        steps=4000, runner=Runner.DATAPARALLEL, sync_mode="asp"))
    await client.aforce_login(personas.member)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    socket = WebsocketCommunicator(application, f"/ws/jobs/work/{job.work_id}/",
                                   headers=[(b"cookie", cookie), (b"origin", b"http://localhost")])
    assert (await socket.connect())[0]
    run = asyncio.create_task(sync_to_async(work_services.run_work, thread_sensitive=False)(
        job.work_id))
    while "step" not in (await socket.receive_json_from(timeout=60))["work"]["metrics"]:
        pass  # wait until the trainer reports, so the cancel hits a running job
    await async_client.aforce_login(personas.member)
    assert (await async_client.post(f"/jobs/{job.pk}/cancel/")).status_code == 302
    events = []
    while not events or not events[-1]["finished"]:
        events.append((await socket.receive_json_from(timeout=60))["work"])
    await run
    await socket.disconnect()
    assert events[-1]["status"] == "cancelled"
    job = await Job.objects.aget(pk=job.pk)
    assert 0 < job.last_step < 4000 and "cancelled at step" in job.log


def test_parameter_labels_are_words_and_the_name_is_in_the_help(
    login: Any, personas: Any, plan_result: Any
) -> None:
    page = login(personas.member).get(f"/jobs/approve/{plan_result.pk}/").content.decode()
    assert "Plateau test: minimum improvement" in page and "[plateau_delta]" in page
    assert ">ahl_steps<" not in page and "Coarse phase: steps per round" in page


def test_a_data_parallel_run_shows_its_measured_throughput_not_a_window(
    login: Any, personas: Any, source: Any
) -> None:
    """The one definition (samples of the steps after the first, over the first to the last
    finished step), in the summary, the tile, the list and the API; the live samples carry
    it next to their window figure."""
    job = services.approve(personas.member, source, RunOptions(
        steps=30, runner=Runner.DATAPARALLEL, sync_mode="ssp", sync_params={"staleness": 1},
        dataparallel={"workers": 3, "slowdowns": [1, 1, 4], "backend": "emulated"}))
    work_services.run_work(job.work_id)
    job = Job.objects.select_related("work").get(pk=job.pk)
    assert job.work.status == Status.SUCCEEDED, job.work.error
    summary = job.summary
    # ssp keeps every worker's batch: the samples in the span are all steps' but the first.
    assert summary["samples_in_span"] == (summary["steps"] - 1) * job.batch_size
    assert summary["samples"] == summary["steps"] * job.batch_size
    assert summary["throughput"] == pytest.approx(summary["samples_in_span"] / summary["span_s"])
    assert summary["startup_s"] > 0 and summary["startup_s"] + summary["span_s"] == pytest.approx(
        summary["elapsed_s"], rel=1e-6)
    assert job.last_throughput == pytest.approx(summary["throughput"])
    windows = [m.samples_per_s for m in JobMetric.objects.filter(job=job, run=1)]
    assert windows and summary["throughput"] not in windows  # not a window's figure
    client = login(personas.viewer)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"{summary['throughput']:.1f} samples/s measured (per emulated s" in page
    assert f"{summary['throughput']:.1f}" in client.get("/jobs/").content.decode()
    assert client.get(f"/api/jobs/{job.pk}/").json()["last_throughput"] == pytest.approx(
        summary["throughput"])
