import numpy as np
import pytest

from heterps_core.errors import InstanceError
from heterps_core.generate import random_instance
from heterps_core.rl.features import (
    LAYER_FEATURES,
    MAX_RESOURCES,
    PAIR_FEATURES,
    featurize,
    usable,
)


def test_shapes_and_finiteness() -> None:
    instance = random_instance(3, 12, 4)
    f = featurize(instance)
    assert f.layer.shape == (12, LAYER_FEATURES)
    assert f.pair.shape == (12, MAX_RESOURCES, PAIR_FEATURES)
    assert np.isfinite(f.layer).all() and np.isfinite(f.pair).all()
    assert not f.mask[:, 4:].any()  # padding is never usable
    assert f.reference_cost > 0


def test_mask_excludes_missing_compute_and_memory_that_cannot_fit(tiny) -> None:
    data = tiny.to_dict()
    del data["layers"][1]["compute_s"]["gpu"]  # fc1 cannot run on gpu
    data["layers"][2]["memory_gb"] = 40.0  # fc2 (not shardable) exceeds the 32 GB gpu
    data["layers"][0]["memory_gb"] = 300.0  # shardable: 2 cpus hold it, 8 gpus (256 GB) cannot
    mask = usable(type(tiny).from_dict(data))
    assert mask[0, :2].tolist() == [True, False]
    assert mask[1, :2].tolist() == [True, False]
    assert mask[2, :2].tolist() == [True, False]


def test_price_weighted_features_do_not_depend_on_units(tiny) -> None:
    # Doubling every compute time and the batch size leaves the dollar ratios unchanged.
    data = tiny.to_dict()
    data["batch_size"] *= 2
    for layer in data["layers"]:
        layer["compute_s"] = {k: 2 * v for k, v in layer["compute_s"].items()}
    a, b = featurize(tiny), featurize(type(tiny).from_dict(data))
    assert np.allclose(a.pair[:, :, 1], b.pair[:, :, 1])


def test_too_many_resources_is_a_clear_error(tiny) -> None:
    data = tiny.to_dict()
    data["resources"] = [dict(data["resources"][0], name=f"r{i}") for i in range(9)]
    for layer in data["layers"]:
        layer["compute_s"] = {"r0": 0.01}
    with pytest.raises(InstanceError, match="at most 8 resources"):
        featurize(type(tiny).from_dict(data))
