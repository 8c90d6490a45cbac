"""A cheap local search on the cost model that polishes the best plan the policy found.

Moves, cheapest neighbourhood first: move a whole stage to another resource (this also merges
it into a neighbour), move one layer (this also shifts a stage boundary by one layer), move any
run of consecutive layers to one resource (this opens or closes a stage anywhere), move two
single layers at once. First
improvement, repeated until no move helps or the deadline passes. It is what closes the last
percent or so after sampling; the scheduler's notes and docs/rl.md say so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from heterps_core.rl.fastcost import AssignmentCosts, Outcome, better, stage_runs


def polish(
    costs: AssignmentCosts,
    mask: np.ndarray,
    assignment: list[int],
    outcome: Outcome,
    deadline: float,
) -> tuple[list[int], Outcome, int]:
    """Improve `assignment` (whose outcome is `outcome`); returns (assignment, outcome, moves)."""
    best, best_out = list(assignment), outcome
    moves = 0
    improved = True
    while improved and time.perf_counter() < deadline:
        improved = False
        for candidate in _neighbours(best, mask, costs.n_resources):
            out = costs.outcome(candidate)
            if better(out, best_out):
                best, best_out = candidate, out
                moves += 1
                improved = True
                break
            if time.perf_counter() >= deadline:
                break
    return best, best_out, moves


def _neighbours(assignment: list[int], mask: np.ndarray, n_resources: int) -> Iterator[list[int]]:
    for first, last, r in stage_runs(assignment):
        for other in range(n_resources):
            if other != r and mask[first : last + 1, other].all():
                yield assignment[:first] + [other] * (last - first + 1) + assignment[last + 1 :]
    for layer, r in enumerate(assignment):
        for other in range(n_resources):
            if other != r and mask[layer, other]:
                candidate = list(assignment)
                candidate[layer] = other
                yield candidate
    n = len(assignment)
    for first in range(n):
        for last in range(first + 1, n):
            for other in range(n_resources):
                if mask[first : last + 1, other].all():
                    yield assignment[:first] + [other] * (last - first + 1) + assignment[last + 1 :]
    # Two single layers at once: what splits a stage in three to round its units down, which
    # neither move alone pays for.
    singles = [(layer, other) for layer, r in enumerate(assignment)
               for other in range(n_resources) if other != r and mask[layer, other]]
    for i, (a, ra) in enumerate(singles):
        for b, rb in singles[i + 1 :]:
            if b != a:
                candidate = list(assignment)
                candidate[a], candidate[b] = ra, rb
                yield candidate


def iterated_polish(
    costs: AssignmentCosts,
    mask: np.ndarray,
    assignment: list[int],
    outcome: Outcome,
    deadline: float,
    seed: int = 0,
    patience: int = 400,
) -> tuple[list[int], Outcome, int]:
    """Iterated local search: polish, then repeatedly kick the best plan (move one to three
    short random runs of layers to random usable resources) and polish again, keeping improvements.
    Stops at the deadline or after `patience` kicks in a row that found nothing better.
    Returns (assignment, outcome, kicks that improved)."""
    rng = np.random.default_rng(seed)
    best, best_out, _ = polish(costs, mask, assignment, outcome, deadline)
    wins = 0
    idle = 0
    n = len(best)
    while time.perf_counter() < deadline and idle < patience:
        candidate = list(best)
        for _ in range(int(rng.integers(1, 4))):
            first = int(rng.integers(0, n))
            # Mostly short runs: the optimum's small stages are what first improvement misses.
            last = min(n - 1, first + int(rng.geometric(0.5)) - 1)
            usable = np.flatnonzero(mask[first : last + 1].all(axis=0))
            if usable.size:
                candidate[first : last + 1] = [int(rng.choice(usable))] * (last - first + 1)
        out = costs.outcome(candidate)
        candidate, out, _ = polish(costs, mask, candidate, out, deadline)
        if better(out, best_out):
            best, best_out = candidate, out
            wins += 1
            idle = 0
        else:
            idle += 1
    return best, best_out, wins
