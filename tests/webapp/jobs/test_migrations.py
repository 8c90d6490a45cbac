"""The migration to one `options` JSON keeps every existing job's settings, both ways."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("jobs", "0002_runner_dataparallel")]
AFTER = [("jobs", "0003_runner_options")]


def _migrate(target: list[tuple[str, str]]):  # type: ignore[no-untyped-def]
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
def test_existing_jobs_keep_their_settings_through_the_options_migration() -> None:
    old = _migrate(BEFORE)
    project = old.get_model("projects", "Project").objects.create(name="p")
    Job = old.get_model("jobs", "Job")
    common = {"project": project, "name": "j", "plan": {"stages": []}, "model_name": "ctr_dnn",
              "steps": 8, "batch_size": 64, "predicted_throughput": 1.0,
              "predicted_cost_per_hour": 1.0}
    pipeline = Job.objects.create(**common, runner="pipeline", sync_mode="async",
                                  binding={"cpu-b": "cpu:2"}, micro_batches=4)
    dataparallel = Job.objects.create(
        **common, runner="dataparallel", sync_mode="ssp", sync_params={"staleness": 2},
        dataparallel={"workers": 3, "slowdowns": [1.0, 1.0, 4.0], "backend": "emulated"})
    try:
        new = _migrate(AFTER)
        jobs = new.get_model("jobs", "Job").objects
        assert jobs.get(pk=pipeline.pk).options == {
            "sync": "async", "binding": {"cpu-b": "cpu:2"}, "micro_batches": 4}
        assert jobs.get(pk=dataparallel.pk).options == {
            "mode": "ssp", "params": {"staleness": 2}, "workers": 3,
            "slowdowns": [1.0, 1.0, 4.0], "backend": "emulated"}
        back = _migrate(BEFORE).get_model("jobs", "Job").objects
        restored = back.get(pk=pipeline.pk)
        assert (restored.sync_mode, restored.binding, restored.micro_batches) == (
            "async", {"cpu-b": "cpu:2"}, 4)
        restored = back.get(pk=dataparallel.pk)
        assert (restored.sync_mode, restored.sync_params, restored.dataparallel) == (
            "ssp", {"staleness": 2},
            {"workers": 3, "slowdowns": [1.0, 1.0, 4.0], "backend": "emulated"})
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_both_runners_keep_the_sync_mode_under_one_key_and_old_jobs_get_their_bound(
    two_stage_plan: dict[str, Any],
) -> None:
    from heterps_core.plan import Plan

    before, after = [("jobs", "0005_job_log_files")], [
        ("jobs", "0006_one_sync_key_flushed_throughput")]
    old = _migrate(before)
    project = old.get_model("projects", "Project").objects.create(name="p")
    Job = old.get_model("jobs", "Job")
    plan = Plan.from_dict(two_stage_plan)
    common = {"project": project, "name": "j", "plan": two_stage_plan,
              "model_name": "ctr_dnn", "steps": 8, "batch_size": 64,
              "predicted_throughput": plan.throughput, "predicted_cost_per_hour": 1.0}
    exact = Job.objects.create(**common, runner="pipeline",
                               options={"sync": "bsp", "binding": {}, "micro_batches": 4})
    overlapped = Job.objects.create(**common, runner="pipeline",
                                    options={"sync": "async", "binding": {},
                                             "micro_batches": 4})
    dp_options = {"params": {"staleness": 2}, "workers": 3, "slowdowns": [1.0, 1.0, 4.0],
                  "backend": "emulated"}
    dataparallel = Job.objects.create(**common, runner="dataparallel",
                                      options={"mode": "ssp", **dp_options})
    try:
        jobs = _migrate(after).get_model("jobs", "Job").objects
        assert jobs.get(pk=dataparallel.pk).options == {"sync": "ssp", **dp_options}
        assert jobs.get(pk=exact.pk).flushed_throughput == pytest.approx(
            plan.flushed_throughput)
        assert jobs.get(pk=overlapped.pk).flushed_throughput is None
        assert jobs.get(pk=dataparallel.pk).flushed_throughput is None
        back = _migrate(before).get_model("jobs", "Job").objects
        assert back.get(pk=dataparallel.pk).options == {"mode": "ssp", **dp_options}
        assert back.get(pk=exact.pk).options["sync"] == "bsp"
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
