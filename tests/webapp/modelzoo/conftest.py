"""A project with the demo catalogue, a zoo model profiled once per session (tiny size, so
the profiler's one-off calibration is the only slow part), and a cluster of every type.
The same file sits in tests/webapp/{profiling,planning,rltraining}/."""

from __future__ import annotations

from typing import Any

import pytest

from heterps_core.profiler import ProfileOptions, profile_zoo_model
from heterps_core.profiler.result import ModelProfile

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
