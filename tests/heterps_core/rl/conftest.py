"""Shared fixtures for the RL tests: the spec's examples and brute-force optima."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from heterps_core.instance import Instance
from heterps_core.rl.fastcost import AssignmentCosts, Outcome, better

# The spec's examples, copied into the repository so a clean checkout tests on its own.
EXAMPLES = Path(__file__).resolve().parents[1] / "schedulers" / "data"


def example(name: str) -> Instance:
    return Instance.load(EXAMPLES / name)


def brute_force(instance: Instance) -> Outcome:
    """The optimum by enumerating every assignment (small instances only)."""
    costs = AssignmentCosts(instance)
    best: Outcome | None = None
    for assignment in itertools.product(range(costs.n_resources), repeat=costs.n_layers):
        out = costs.outcome(assignment)
        if better(out, best):
            best = out
    assert best is not None
    return best


@pytest.fixture
def tiny() -> Instance:
    return example("tiny.json")


@pytest.fixture
def capped() -> Instance:
    return example("caps.json")


@pytest.fixture
def infeasible() -> Instance:
    return example("infeasible.json")


@pytest.fixture
def optimum():
    return brute_force
