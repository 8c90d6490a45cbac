"""Fixtures for every web app's tests: personas come from tests/conftest.py; here are the
shared scenes (a profiled zoo model, a cluster, a plan ready to run) and test-wide settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.db import connections

from heterps_core.profiler import ProfileOptions, profile_zoo_model
from heterps_core.profiler.result import ModelProfile
from webapp.jobs import samples


@pytest.fixture(autouse=True)
def plain_http(settings: Any) -> None:
    # Production mode (CI sets DATABASE_URL) redirects to https; the test client speaks http.
    settings.SECURE_SSL_REDIRECT = False


@pytest.fixture(autouse=True, scope="session")
def end_stray_test_database_sessions(
    django_db_setup: None, django_db_blocker: Any
) -> Iterator[None]:
    # Django's async ORM (acreate, aforce_login) leaves connections open in asgiref's
    # worker thread, out of reach of this one; PostgreSQL will not drop a test database
    # that still has sessions, so end them before pytest-django drops it.
    yield
    connection = connections["default"]
    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


# A project with the demo catalogue, a zoo model profiled once per session (tiny size, so the
# profiler's one-off calibration is the only slow part), and a cluster of every type.
BATCH = 64


@pytest.fixture(scope="session")
def tiny_profile() -> ModelProfile:
    return profile_zoo_model("ctr_dnn", ProfileOptions(threads=1, warmup=0, repeats=1),
                             size="tiny", batch_size=BATCH)


@pytest.fixture
def catalogue(personas: Any) -> list[Any]:
    from webapp.catalogue.demo import CatalogueDemo
    from webapp.catalogue.models import ResourceType

    CatalogueDemo().load(personas.project)
    return list(ResourceType.objects.filter(project=personas.project))


@pytest.fixture
def zoo_model(personas: Any, catalogue: list[Any]) -> Any:
    from webapp.modelzoo.services import add_zoo_model

    return add_zoo_model(personas.member, personas.project, "ctr_dnn", "tiny")


@pytest.fixture
def profiled(zoo_model: Any, tiny_profile: ModelProfile, personas: Any) -> Any:
    """A finished profile run of `zoo_model` (recorded straight through the service)."""
    from webapp.profiling.models import ProfileRun
    from webapp.profiling.services import record_profile

    run = ProfileRun.objects.create(project=personas.project, model=zoo_model, batch_size=BATCH)
    return record_profile(run.pk, tiny_profile)


@pytest.fixture
def cluster(personas: Any, catalogue: list[Any]) -> Any:
    from webapp.planning.services import create_cluster

    return create_cluster(personas.member, personas.project, "all", catalogue)


# A job source: the tiny CTR-DNN's sample plan in the personas' project.
@pytest.fixture
def two_stage_plan() -> dict[str, Any]:
    return samples.ctr_plan()


@pytest.fixture
def source(personas: Any, two_stage_plan: dict[str, Any]) -> Any:
    from webapp.jobs.services import PlanSource

    return PlanSource(project=personas.project, plan=two_stage_plan, model_name=samples.MODEL,
                      model_size=samples.SIZE, batch_size=samples.BATCH, scheduler="exact")


@pytest.fixture
def plan_result(personas: Any, two_stage_plan: Any) -> Any:
    """A planning result row as the planning app stores it (its model, request, plan)."""
    project = personas.project
    model = apps.get_model("modelzoo", "RegisteredModel").objects.create(
        project=project, name="CTR tiny", zoo_name="ctr_dnn", size="tiny")
    cluster = apps.get_model("planning", "Cluster").objects.create(project=project, name="c")
    request = apps.get_model("planning", "PlanningRequest").objects.create(
        project=project, model=model, cluster=cluster, batch_size=64, throughput_target=100.0,
        instance={}, schedulers=["exact"])
    return apps.get_model("planning", "PlanResult").objects.create(
        project=project, request=request, scheduler="exact", plan=two_stage_plan,
        feasible=True, throughput=two_stage_plan["throughput"],
        cost_per_hour=two_stage_plan["cost_per_hour"])


@pytest.fixture(autouse=True)
def job_logs_in_tmp(settings: Any, tmp_path: Any) -> None:
    # Runs write their processes' logs under VAR_DIR/jobs; keep the repository's var/ clean.
    settings.VAR_DIR = tmp_path
