"""Profiling on the resources' own machines, the parts that need no second process: what a
profile does when no agent serves a type (embedded mode: never), the wait's timeout and
cancel, an agent's measurement and failure as the agent task stores them, and planning
and the page preferring measured figures. A real worker: tests/workers/test_profile_agents.py.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ValidationError

from webapp.background.context import WorkCancelled, WorkContext
from webapp.background.models import Status, Work
from webapp.background.services import run_work
from webapp.catalogue.models import ResourceType
from webapp.modelzoo.services import add_factory_model
from webapp.planning.services import build_request_instance
from webapp.profiling import remote, services
from webapp.profiling.models import LayerResult, Origin, ProfileRun, ResourceProfile

pytestmark = pytest.mark.django_db
FACTORY = "heterps_core.zoo.examples.tabular:tabular_ctr"


def _waiting(run: ProfileRun, name: str) -> ResourceProfile:
    """An origin row as `open_origins` leaves it for a served type (no task sent)."""
    return ResourceProfile.objects.create(
        run=run, resource_type=ResourceType.objects.get(project_id=run.project_id, name=name),
        resource=name, queue=f"heterps.res.{name}", origin=Origin.WAITING)


def _context(run: ProfileRun) -> WorkContext:
    return WorkContext(work_id=0, project_id=run.project_id, user_id=None, params={})


def test_without_agents_every_type_keeps_the_labelled_roofline(
    personas: Any, zoo_model: Any, tiny_profile: Any
) -> None:
    # The embedded default has no agents at all; in production mode no worker serves the
    # demo catalogue's queues here. Either way the figures are today's: measured here, and
    # a roofline estimate per type.
    run = services.start_profile(personas.member, zoo_model, batch_size=32, repeats=1)
    run_work(run.work.pk)
    work = Work.objects.get(pk=run.work.pk)
    assert work.status == Status.SUCCEEDED, work.error
    layers = len(zoo_model.layers)
    assert LayerResult.objects.filter(run=run, source="measured").count() == layers
    assert LayerResult.objects.filter(run=run, source="estimated").count() == layers * 4
    origins = {o.resource: o for o in ResourceProfile.objects.filter(run=run)}
    assert set(origins) == {"cpu-96", "t4", "v100", "a100-40"}
    for name, origin in origins.items():
        assert origin.origin == Origin.ESTIMATED and origin.host == ""
        where = ("embedded mode: no agents" if django_settings.MODE.embedded_worker
                 else f"queue heterps.res.{name}")
        assert origin.note.startswith(f"estimated (roofline) - no worker serves {name} ("
                                      f"{where}")
    assert work.result["resource_types"]["t4"]["origin"] == "estimated"


def test_the_wait_falls_back_to_the_roofline_at_its_timeout(profiled: Any) -> None:
    origin = _waiting(profiled, "cpu-96")
    start = time.monotonic()
    remote.wait_for_agents(profiled.pk, _context(profiled), timeout_s=0.3)
    assert time.monotonic() - start < 5
    origin.refresh_from_db()
    assert origin.origin == Origin.ESTIMATED
    assert origin.note == ("estimated (roofline) - no answer from an agent on "
                           "heterps.res.cpu-96 within 0.3 s (setting PROFILE_AGENT_TIMEOUT_S)")
    # The roofline figures stored with the local measurement stand.
    assert {r.source for r in LayerResult.objects.filter(run=profiled, resource="cpu-96")} == {
        "estimated"}


def test_cancelling_stops_the_wait(profiled: Any) -> None:
    origin = _waiting(profiled, "t4")
    ctx = _context(profiled)
    threading.Timer(0.3, ctx.request_stop, args=["cancelled"]).start()
    start = time.monotonic()
    with pytest.raises(WorkCancelled):
        remote.wait_for_agents(profiled.pk, ctx, timeout_s=600)
    assert time.monotonic() - start < 5
    origin.refresh_from_db()
    assert origin.origin == Origin.ESTIMATED
    assert origin.note == ("estimated (roofline) - the profile was cancelled while waiting "
                           "for its agent")


def test_an_agents_measurement_replaces_the_roofline_and_planning_uses_it(
    personas: Any, profiled: Any, cluster: Any, login: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(remote.THREADS_VARIABLE, "1")
    origin = _waiting(profiled, "cpu-96")
    columns = services.layer_table(profiled)["resources"]
    answer = remote.measure_here(profiled.pk, origin.pk, "cpu-96@machine-7")
    assert answer["status"] == "measured", answer
    origin.refresh_from_db()
    assert origin.origin == Origin.MEASURED and origin.host == "cpu-96@machine-7"
    assert origin.measured_at is not None and origin.device.startswith("cpu (1 threads")
    rows = list(LayerResult.objects.filter(run=profiled, resource="cpu-96").order_by("index"))
    assert [r.source for r in rows] == ["measured"] * len(profiled.model.layers)
    assert {r.device for r in rows} == {f"cpu-96@machine-7: {origin.device}"}
    measured = {layer["name"]: layer["time"]["median_s"] for layer in origin.profile["layers"]}
    assert {r.layer: r.seconds for r in rows} == measured
    # The column stays where it was (the table orders resources by the rows' ids).
    assert services.layer_table(profiled)["resources"] == columns
    # The other types keep their estimate.
    assert {r.source for r in LayerResult.objects.filter(run=profiled, resource="t4")} == {
        "estimated"}

    instance, provenance, run_id = build_request_instance(profiled.model, cluster, 64, 100.0,
                                                          None)
    assert run_id == profiled.pk
    for figure in provenance:
        if figure["resource"] == "cpu-96":
            assert figure["source"] == "measured"
            assert figure["seconds"] == measured[figure["layer"]]
            assert figure["device"].startswith("cpu-96@machine-7: cpu (1 threads")
        else:
            assert figure["source"] == "estimated"
    for layer in instance.layers:
        assert layer.compute_s["cpu-96"] == measured[layer.name]

    page = login(personas.viewer).get(f"/profiling/{profiled.pk}/").content.decode()
    assert "measured on cpu-96@machine-7 (cpu (1 threads" in page
    # A second answer for the same row (a redelivered task) changes nothing.
    assert remote.measure_here(profiled.pk, origin.pk, "elsewhere")["status"] == "late"
    # Ids that do not belong together are answered, not trusted.
    assert remote.measure_here(profiled.pk + 1000, origin.pk)["status"] == "gone"


def test_an_agent_that_cannot_load_the_model_leaves_a_labelled_roofline(
    personas: Any, catalogue: Any, settings: Any, login: Any
) -> None:
    model = add_factory_model(personas.member, personas.project, FACTORY)
    run = ProfileRun.objects.create(project=personas.project, model=model, batch_size=16)
    origin = _waiting(run, "cpu-96")
    settings.MODEL_FACTORIES = ()  # this machine's operator allowed no factories
    answer = remote.measure_here(run.pk, origin.pk, "cpu-96@machine-7")
    assert answer["status"] == "failed"
    origin.refresh_from_db()
    assert origin.origin == Origin.ESTIMATED
    assert origin.note.startswith("estimated (roofline) - the agent on cpu-96@machine-7 "
                                  f"failed: factory: '{FACTORY}' is not on this server's "
                                  "allow-list")
    api = login(personas.viewer).get(f"/api/profile-runs/{run.pk}/")
    assert api.status_code == 200
    assert api.json()["origins"][0]["note"] == origin.note
    assert login(personas.outsider).get(f"/api/profile-runs/{run.pk}/").status_code == 404


def test_a_gpu_type_on_a_machine_without_cuda_says_so(
    profiled: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the GPU type is measured on it")
    monkeypatch.delenv(remote.DEVICE_VARIABLE, raising=False)
    origin = _waiting(profiled, "t4")
    assert remote.measure_here(profiled.pk, origin.pk, "t4@box")["status"] == "failed"
    origin.refresh_from_db()
    assert "HETERPS_PROFILE_DEVICE: this is a GPU resource type and this machine has no " \
           "CUDA device" in origin.note


def test_a_bad_timeout_setting_names_itself(settings: Any, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    settings.PROFILE_AGENT_TIMEOUT_S = "soon"
    with pytest.raises(ValidationError) as err:
        remote.agent_timeout_s()
    assert "PROFILE_AGENT_TIMEOUT_S" in err.value.message_dict
    del settings.PROFILE_AGENT_TIMEOUT_S
    monkeypatch.setenv(remote.TIMEOUT_VARIABLE, "-1")
    with pytest.raises(ValidationError) as err:
        remote.agent_timeout_s()
    assert remote.TIMEOUT_VARIABLE in err.value.message_dict
    monkeypatch.setenv(remote.TIMEOUT_VARIABLE, "45")
    assert remote.agent_timeout_s() == 45.0


def test_the_page_says_why_each_type_is_estimated(personas: Any, login: Any,
                                                  profiled: Any) -> None:
    page = login(personas.member).get(f"/profiling/{profiled.pk}/").content.decode()
    assert "No agent was asked for this run" in page  # recorded without the profile work
    ResourceProfile.objects.create(run=profiled, resource="v100", origin=Origin.ESTIMATED,
                                   note="estimated (roofline) - no worker serves v100 (x)")
    page = login(personas.viewer).get(f"/profiling/{profiled.pk}/").content.decode()
    assert "estimated (roofline) - no worker serves v100 (x)" in page


def test_an_agents_figures_bring_their_own_spread_and_load_label(
    personas: Any, profiled: Any, cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from heterps_core.profiler.measure import CpuUse
    from heterps_core.profiler.result import ModelProfile

    monkeypatch.setenv(remote.THREADS_VARIABLE, "1")
    origin = _waiting(profiled, "cpu-96")
    assert remote.measure_here(profiled.pk, origin.pk, "cpu-96@machine-7")["status"] == \
        "measured"
    origin.refresh_from_db()
    # The agent repeats until its medians are known (as the server does): >= 6 runs each.
    spreads = {layer["name"]: layer["time"]["median_spread"]
               for layer in origin.profile["layers"]}
    assert all(s is not None for s in spreads.values())
    instance, _, _ = build_request_instance(profiled.model, cluster, 64, 100.0, None)
    for layer in instance.layers:
        assert layer.compute_spread["cpu-96"] == spreads[layer.name]

    busy = ModelProfile.from_dict(origin.profile)
    busy = replace(busy, layers=tuple(
        replace(layer, time=replace(layer.time, cpu_use=CpuUse(0.4, 1.0, 1.0)))
        for layer in busy.layers))
    second = _waiting(profiled, "t4")
    assert remote.record_measured(second.pk, busy, "t4@machine-8")
    second.refresh_from_db()
    assert "measured under load: other processes held 60%" in second.note
