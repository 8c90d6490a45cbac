"""Every zoo model learns from its own synthetic data (the acceptance test of issue 4)."""

import math

import pytest
import torch

from heterps_core import zoo
from heterps_core.zoo.training import split_parameters, train


@pytest.mark.parametrize("name", zoo.names())
def test_fifty_steps_reduce_the_loss(name):
    model_def = zoo.get(name)
    config = model_def.config("tiny")
    model = model_def.build(config, seed=0)
    losses = train(model, model_def.batches(config, 128, seed=1), steps=50, lr=3e-3,
                   sparse_lr=0.01)
    assert all(torch.isfinite(torch.tensor(losses)))
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.95 * first, f"{name}: loss {first:.3f} -> {last:.3f}"


@pytest.mark.parametrize("name", zoo.names())
def test_embedding_gradients_are_sparse_and_dense_ones_are_not(name):
    model_def = zoo.get(name)
    config = model_def.config("tiny")
    model = model_def.build(config)
    inputs, labels = next(model_def.batches(config, 16))
    model.loss(model(inputs), labels).backward()
    sparse, dense = split_parameters(model)
    assert sparse and dense
    assert all(p.grad is not None and p.grad.is_sparse for p in sparse)
    assert all(p.grad is None or not p.grad.is_sparse for p in dense)
    first = model.layers[0]
    assert {id(p) for p in first.parameters()} == {id(p) for p in sparse}


@pytest.mark.parametrize("name", zoo.names())
def test_chain_boundaries_carry_one_float_tensor(name):
    model_def = zoo.get(name)
    config = model_def.config("tiny")
    model = model_def.build(config)
    inputs, labels = next(model_def.batches(config, 8))
    x = model.run_layers(inputs, 0, 0)
    for i in range(1, len(model.layers)):
        assert isinstance(x, torch.Tensor) and x.is_floating_point() and x.shape == (
            8, sum(math.prod(shape) for _, shape in model.boundary(i - 1)))
        x = model.run_layers(x, i, i)
    whole = model(inputs)
    torch.testing.assert_close(x, whole)
    assert whole.shape == labels.shape
    # A cut anywhere gives the same result as the whole chain (what pipeline stages rely on).
    cut = len(model.layers) // 2
    torch.testing.assert_close(
        model.run_layers(model.run_layers(inputs, 0, cut - 1), cut, len(model.layers) - 1), whole
    )


@pytest.mark.parametrize("name", zoo.names())
def test_loss_uses_no_parameters_of_the_model(name):
    model_def = zoo.get(name)
    config = model_def.config("tiny")
    model = model_def.build(config)
    inputs, labels = next(model_def.batches(config, 8))
    output = model(inputs).detach().requires_grad_(True)
    model.loss(output, labels).backward()
    assert output.grad is not None
    assert all(p.grad is None for p in model.parameters())
