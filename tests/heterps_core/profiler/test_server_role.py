"""The instance of a profiled model with sparse tables carries the parameter server's role
(v2), so every plan of it places the server; a model without keeps its v1 instance."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from heterps_core import schedulers
from heterps_core.hardware import default_catalogue
from heterps_core.instance import Instance
from heterps_core.profiler import ProfileOptions, profile_zoo_model
from heterps_core.profiler.instance_builder import build_instance
from heterps_core.profiler.result import ModelProfile


@pytest.fixture(scope="module")
def profile() -> ModelProfile:
    torch.set_num_threads(1)
    return profile_zoo_model("ctr_dnn", ProfileOptions(threads=1, warmup=1, repeats=2),
                             size="tiny", batch_size=64)


def test_sparse_tables_give_a_v2_instance_with_a_server_role(profile: ModelProfile) -> None:
    catalogue = default_catalogue()
    instance = build_instance(profile, catalogue, 1000).instance
    assert instance.version == 2
    role = instance.parameter_server
    assert role is not None and role.row_s == {}  # no shard timed: priced by the network
    assert list(role.hosts) == [k.name for k in catalogue.kinds if k.kind == "cpu"]
    emb = profile.layers[0]
    assert emb.sparse_bytes > 0 and emb.sparse_rows > 0
    layer = instance.layers[0]
    assert layer.sparse_pull_mb == layer.sparse_push_mb == pytest.approx(
        emb.sparse_bytes / 2 / 1e6)
    assert layer.sparse_rows == emb.sparse_rows
    # A distinct row is a whole embedding row: the bytes are rows x dim x 4, both ways.
    assert emb.sparse_bytes % (2 * 4 * emb.sparse_rows) == 0
    assert all(lyr.sparse_pull_mb == lyr.sparse_rows == 0 for lyr in instance.layers[1:])
    plan = schedulers.create("exact").plan(instance)
    assert plan.feasible and plan.parameter_server is not None
    assert plan.parameter_server.resource in role.hosts


def test_the_exact_plan_with_the_server_equals_brute_force(profile: ModelProfile) -> None:
    catalogue = default_catalogue().select(["cpu-c6i.8xlarge", "cpu-r6i.8xlarge", "gpu-t4"])
    feasible = 0
    for target in (1000, 20_000, 200_000):
        instance = build_instance(profile, catalogue, target).instance
        exact = schedulers.create("exact").plan(instance)
        brute = schedulers.create("brute").plan(instance)
        assert exact.feasible == brute.feasible
        if exact.feasible:
            feasible += 1
            assert exact.parameter_server is not None
            assert exact.cost_per_hour == pytest.approx(brute.cost_per_hour, rel=1e-9)
            assert exact.parameter_server == brute.parameter_server
    assert feasible >= 2


def test_no_cpu_type_lets_every_type_host_the_shards(profile: ModelProfile) -> None:
    catalogue = default_catalogue().select(["gpu-t4", "gpu-a100"])
    role = build_instance(profile, catalogue, 1000).instance.parameter_server
    assert role is not None and list(role.hosts) == ["gpu-t4", "gpu-a100"]


def test_a_model_without_sparse_tables_keeps_its_v1_instance(profile: ModelProfile) -> None:
    dense = replace(profile, layers=tuple(replace(layer, sparse_bytes=0, sparse_rows=0)
                                          for layer in profile.layers))
    data = build_instance(dense, default_catalogue(), 1000).instance.to_dict()
    assert data["version"] == 1 and "parameter_server" not in data
    assert all("sparse_pull_mb" not in layer for layer in data["layers"])
    assert Instance.from_dict(data).version == 1


def test_profiles_stored_before_rows_were_counted_still_load(profile: ModelProfile) -> None:
    stored = profile.to_dict()
    for layer in stored["layers"]:
        del layer["sparse_rows"]
    again = ModelProfile.from_dict(stored)
    assert [layer.sparse_rows for layer in again.layers] == [0] * len(profile.layers)
    assert build_instance(again, default_catalogue(), 1000).instance.parameter_server
