"""Fixtures for every web app's tests: personas come from tests/conftest.py; here are the
shared scenes (a profiled zoo model, a cluster, a plan ready to run) and test-wide settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
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


# The security tests (test_authorization.py, test_bad_input.py): every route the URL
# resolver knows, and one object of every kind in the personas' project to fill them.
@dataclass(frozen=True)
class Route:
    name: str  # namespaced URL name, e.g. "jobs:detail" or "job-detail"
    pattern: str  # the route as written, for messages
    kwargs: tuple[str, ...]  # URL arguments to fill in
    api: bool
    methods: tuple[str, ...]  # for API views, the methods it routes; pages: ()


def all_routes() -> list[Route]:
    """Every named route except the admin's and DRF's format-suffix twins."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found: dict[str, Route] = {}

    def walk(patterns: Any, prefix: str, namespace: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                if p.app_name == "admin":
                    continue
                ns = f"{namespace}{p.namespace}:" if p.namespace else namespace
                walk(p.url_patterns, prefix + str(p.pattern), ns)
            elif isinstance(p, URLPattern) and p.name and "(?P<format>" not in str(p.pattern):
                text = prefix + str(p.pattern)
                methods = _api_methods(p.callback)
                found[f"{namespace}{p.name}"] = Route(
                    f"{namespace}{p.name}", text, tuple(p.pattern.regex.groupindex),
                    text.startswith("api/"), methods)

    walk(get_resolver().url_patterns, "", "")
    return sorted(found.values(), key=lambda r: r.name)


def _api_methods(view: Any) -> tuple[str, ...]:
    """The methods a DRF view answers (a viewset: its routed actions); a page: ()."""
    actions = getattr(view, "actions", None)
    if actions:
        # DRF adds "head" to a viewset's actions dict in place on its first GET, so the
        # list would depend on which tests ran before; HEAD follows GET anyway.
        return tuple(m.upper() for m in actions if m not in ("head", "options"))
    cls = getattr(view, "cls", None)
    if cls is None:
        return ()
    return tuple(m.upper() for m in ("get", "post", "put", "patch", "delete") if hasattr(cls, m))


@pytest.fixture(scope="session")
def routes() -> list[Route]:
    return all_routes()


@dataclass
class World:
    """One row of every kind in `project`; `ids[kind]` their primary keys."""

    project: Any
    ids: dict[str, int]


@pytest.fixture
def world(personas: Any, plan_result: Any, catalogue: list[Any]) -> World:
    from webapp.background.models import Work

    project = personas.project
    request = plan_result.request
    make = lambda label, **kw: apps.get_model(*label.split(".")).objects.create(  # noqa: E731
        project=project, **kw)
    work = make("background.Work", kind="evaluate", created_by=personas.member)
    job_model = apps.get_model("jobs", "Job")
    # A pipeline job as approving makes one (its runner's options, where the model has them).
    options = ({"options": {"sync": "bsp"}}
               if any(f.name == "options" for f in job_model._meta.fields) else {})
    job = make("jobs.Job", name="j", plan=plan_result.plan, model_name="ctr_dnn", steps=4,
               batch_size=64, predicted_throughput=1.0, predicted_cost_per_hour=1.0, **options,
               work=make("background.Work", kind="job-run", params={"job": 0, "run": 1}))
    Work.objects.filter(pk=job.work_id).update(params={"job": job.pk, "run": 1})
    profile = make("profiling.ProfileRun", model=request.model, batch_size=64)
    rl = make("rltraining.RLTrainingRun", request=request)
    request.cluster.resource_types.set(catalogue)
    request.instance = samples.ctr_instance().to_dict()  # pages draw the request's chain
    request.save(update_fields=["instance"])
    return World(project, {
        "project": project.pk, "work": work.pk, "job": job.pk, "model": request.model.pk,
        "cluster": request.cluster.pk, "request": request.pk, "result": plan_result.pk,
        "profile": profile.pk, "rl": rl.pk, "resource": catalogue[0].pk,
        **_team_ids(personas),
    })


def _team_ids(personas: Any) -> dict[str, int]:
    """The member's membership and a pending invitation (the team routes name them)."""
    from webapp.projects import services
    from webapp.projects.models import Membership

    membership = Membership.objects.get(project=personas.project, user=personas.member)
    invited = services.invite(personas.owner, personas.project, "new@example.com", "member",
                              lambda token: f"/projects/join/?token={token}")
    return {"membership": membership.pk, "invitation": invited.invitation.pk}


@pytest.fixture
def failed_start(personas: Any, source: Any) -> tuple[Any, float]:
    """A job whose run held its processes 2 s and failed before any mini-batch finished
    (the cost and accrual tests); with its $ per second."""
    from webapp.background.models import Status, Work
    from webapp.jobs import services
    from webapp.jobs.models import Job
    from webapp.jobs.services import RunOptions

    job = services.approve(personas.member, source, RunOptions(steps=8))
    rate = job.predicted_cost_per_hour / 3600
    for elapsed in (0.5, 1.0, 1.5, 2.0):
        services.record_sample(job.pk, 1, {
            "step": 0, "total_steps": 8, "elapsed_s": elapsed, "samples_per_s": 0.0,
            "loss": None, "cost": rate * elapsed, "stages": []}, base_cost=0.0)
    Work.objects.filter(pk=job.work_id).update(status=Status.FAILED)
    return Job.objects.select_related("work").get(pk=job.pk), rate
