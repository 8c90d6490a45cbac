"""The hand-written reference modules compute what the zoo's chains compute: same outputs and
gradients from the same weights, so the speed benchmark compares like with like."""

from __future__ import annotations

import pytest
import torch

from heterps_core import zoo
from heterps_core.zoo.reference import REFERENCES, load_zoo_weights


def test_every_zoo_model_has_a_reference():
    assert sorted(REFERENCES) == zoo.names()


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_reference_matches_the_zoo_chain(name):
    model_def = zoo.get(name)
    config = model_def.config("tiny")
    model = model_def.build(config, seed=3)
    reference = REFERENCES[name](config)
    load_zoo_weights(reference, model)
    inputs, labels = next(model_def.batches(config, 16, seed=5))
    ours, theirs = model(inputs), reference(inputs)
    torch.testing.assert_close(theirs, ours)
    model.loss(ours, labels).backward()
    model.loss(theirs, labels).backward()
    for mine, zoo_param in zip(reference.parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(mine.grad.to_dense(), zoo_param.grad.to_dense())


def test_mismatched_weights_are_refused():
    config = zoo.get("ctr_dnn").config("tiny")
    reference = REFERENCES["ctr_dnn"](config)
    other = zoo.get("dlrm").build(zoo.get("dlrm").config("tiny"))
    with pytest.raises(ValueError, match="do not match"):
        load_zoo_weights(reference, other)
