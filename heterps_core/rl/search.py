"""A cheap local search on the cost model that polishes the best plan the policy found.

Moves, cheapest neighbourhood first: move a whole stage to another resource (this also merges
it into a neighbour), move one layer (this also shifts a stage boundary by one layer), move any
run of consecutive layers to one resource (this opens or closes a stage anywhere), move two
single layers at once. First
improvement, repeated until no move helps: a local optimum. It is what closes the last
percent or so after sampling; the scheduler's notes and docs/rl.md say so.

Budgets are work, never wall time (issue 21): the iterated search's kicks stop after a number
of cost evaluations (`SearchBudget`), or at an optional cap of CPU seconds; the first local
search always runs to its local optimum, so the same start gives the same answer on a quiet
machine and on a busy one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from heterps_core.budget import Deadline, passed
from heterps_core.rl.fastcost import AssignmentCosts, Outcome, better, stage_runs


class SearchBudget:
    """What a search may still do: `evaluations` cost-model calls (None: no limit) and,
    optionally, until a CPU `deadline` (budget.py). `used` counts the calls made against it;
    `first_polish` the calls of an iterated search's first local search, which always runs
    to its end and is not counted against it."""

    def __init__(self, evaluations: int | None = None, deadline: Deadline | None = None) -> None:
        self.evaluations = evaluations
        self.deadline = deadline
        self.used = 0
        self.first_polish = 0

    def spend(self) -> None:
        self.used += 1

    def spent(self) -> bool:
        if self.evaluations is not None and self.used >= self.evaluations:
            return True
        return passed(self.deadline)


def polish(
    costs: AssignmentCosts,
    mask: np.ndarray,
    assignment: list[int],
    outcome: Outcome,
    budget: SearchBudget | None = None,
    prune_pairs: bool = True,
) -> tuple[list[int], Outcome, int]:
    """Improve `assignment` (whose outcome is `outcome`) to a local optimum, or until
    `budget` (None: none) is spent; returns (assignment, outcome, moves). `prune_pairs`
    skips the pairs of single-layer moves that provably cannot be better (`_PairBound`):
    the same moves, in the same order, as without it (tested), with far fewer evaluations."""
    budget = budget or SearchBudget()
    best, best_out = list(assignment), outcome
    moves = 0
    improved = True
    while improved and not budget.spent():
        improved = False
        bound = _PairBound(costs, best, best_out) if prune_pairs else None
        for candidate in _neighbours(best, mask, costs.n_resources, bound):
            out = costs.outcome(candidate)
            budget.spend()
            if better(out, best_out):
                best, best_out = candidate, out
                moves += 1
                improved = True
                break
            if budget.spent():
                break
    return best, best_out, moves


def _neighbours(
    assignment: list[int], mask: np.ndarray, n_resources: int, bound: _PairBound | None = None
) -> Iterator[list[int]]:
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
    hopeless = bound.hopeless(singles) if bound is not None else None
    for i, (a, ra) in enumerate(singles):
        later: Iterable[int] = range(i + 1, len(singles))
        if hopeless is not None:
            later = (np.flatnonzero(~hopeless(i)) + i + 1).tolist()
        for j in later:
            b, rb = singles[j]
            if b != a:
                candidate = list(assignment)
                candidate[a], candidate[b] = ra, rb
                yield candidate


class _PairBound:
    """Which pairs of single-layer moves cannot beat the current plan, without pricing them.

    On a v1 instance a plan's cost is the sum of its stages' (docs/cost-model.md). A single
    move at layer a replaces the maximal runs around a (its own, and a neighbour it merges
    with) by up to three new stages: the run's part before a, a's own (merged with that
    neighbour), the run's part after a; `delta` is the cost change. A pair's cost follows
    from its two moves without pricing the whole plan:
    - moves whose touched runs are apart (an untouched run between them, or a boundary both
      keep: different resources on its two sides) add up: plan + delta_a + delta_b;
    - two moves in one run split it in up to five stages: the run's part before a, a's stage,
      the part between a and b (from a table of that run's sub-stages), b's stage, the part
      after b: plan + (delta_a - the part after a + the run) + (delta_b - the part before b)
      + the part between.
    A pair is skipped when one of its new stages cannot be provisioned (the plan is then
    infeasible) or when it is dearer than the plan by far more than `better`'s tolerance
    (1e-8 relative, plus room for rounding): a dearer plan is never better, caps only remove
    plans. Every other pair (the two moves merge into one stage, or touch neighbouring runs
    across a boundary they change) is priced as before."""

    def __init__(self, costs: AssignmentCosts, assignment: list[int], outcome: Outcome) -> None:
        self.costs = costs
        self.cost = outcome.cost if costs.additive else None
        self.runs = stage_runs(assignment)
        self.run_of = [0] * len(assignment)
        for k, (first, last, _) in enumerate(self.runs):
            self.run_of[first : last + 1] = [k] * (last - first + 1)

    def hopeless(self, singles: list[tuple[int, int]]) -> Callable[[int], np.ndarray] | None:
        """A function of i: for the pairs (i, j > i) of `singles`, True where the pair
        cannot be better; None when nothing can be ruled out (v2, or no feasible plan)."""
        if self.cost is None or not singles:
            return None
        facts = np.array([self._single(a, r) for a, r in singles], dtype=float)
        (layer, res, run, lo, hi, left_res, right_res, delta, ok, size,
         head, ok_head, tail, ok_tail) = facts.T
        ok, ok_head, ok_tail = ok > 0, ok_head > 0, ok_tail > 0
        slack = 1e-8 * abs(self.cost)
        tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def hopeless(i: int) -> np.ndarray:
            rest = slice(i + 1, None)
            apart = (hi[i] < lo[rest]) & (
                (hi[i] + 1 < lo[rest]) | (right_res[i] != left_res[rest]))
            dearer = delta[i] + delta[rest] > slack + 1e-12 * (size[i] + size[rest])
            out = apart & (~ok[i] | ~ok[rest] | dearer)
            k = int(run[i])
            a = int(layer[i])
            # (the same layer twice is no pair; two neighbours moved to one resource merge)
            same = np.flatnonzero((run[rest] == k) & (layer[rest] > a) & (
                (layer[rest] > a + 1) | (res[rest] != res[i]))) + i + 1
            if same.size:
                if k not in tables:
                    tables[k] = self._sub_stages(k)
                cost, fits = tables[k]
                first = self.runs[k][0]
                b = layer[same].astype(int)
                x, y = a + 1 - first, np.maximum(b - 1 - first, a + 1 - first)
                inner = np.where(b > a + 1, cost[x, y], 0.0)
                inner_fits = np.where(b > a + 1, fits[x, y], True)
                value = head[i] + tail[same] + inner
                room = slack + 1e-12 * (size[i] + size[same] + inner)
                out[same - i - 1] = ~ok_head[i] | ~ok_tail[same] | ~inner_fits | (value > room)
            return out

        return hopeless

    def _sub_stages(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """cost[x, y] and provisionable[x, y] of the stage of layers first+x..first+y of run k
        on its resource (x <= y)."""
        first, last, r = self.runs[k]
        size = last - first + 1
        cost = np.zeros((size, size))
        fits = np.zeros((size, size), dtype=bool)
        for x in range(size):
            for y in range(x, size):
                units, value, _ = self.costs.stage(first + x, first + y, r)
                cost[x, y], fits[x, y] = value, units >= 0
        return cost, fits

    def _single(self, a: int, r_new: int) -> tuple[float, ...]:
        """What moving layer a to r_new does: (a, r_new, its run, first and last touched runs,
        resources of its first and last new stages, cost change, all new stages
        provisionable, sum of the costs involved, `head` = change - cost of the run's part
        after a + the run's cost, whether a's stage and the part before it fit, `tail` =
        change - cost of the run's part before a, whether a's stage and the part after fit)."""
        runs, k = self.runs, self.run_of[a]
        first, last, r = runs[k]
        lo = hi = k
        start = end = a
        if a == first and k > 0 and runs[k - 1][2] == r_new:
            lo, start = k - 1, runs[k - 1][0]
        if a == last and k + 1 < len(runs) and runs[k + 1][2] == r_new:
            hi, end = k + 1, runs[k + 1][1]
        own = self.costs.stage(start, end, r_new)
        before = self.costs.stage(first, a - 1, r) if first < a else (0, 0.0, 0.0)
        after = self.costs.stage(a + 1, last, r) if a < last else (0, 0.0, 0.0)
        old = sum(self.costs.stage(*runs[m])[1] for m in range(lo, hi + 1))
        added = own[1] + before[1] + after[1]
        delta = added - old
        left_res = r if first < a else r_new
        right_res = r if a < last else r_new
        return (a, r_new, k, lo, hi, left_res, right_res, delta,
                own[0] >= 0 and before[0] >= 0 and after[0] >= 0, added + old,
                delta - after[1] + self.costs.stage(first, last, r)[1],
                own[0] >= 0 and before[0] >= 0,
                delta - before[1], own[0] >= 0 and after[0] >= 0)


def iterated_polish(
    costs: AssignmentCosts,
    mask: np.ndarray,
    assignment: list[int],
    outcome: Outcome,
    budget: SearchBudget,
    seed: int = 0,
    patience: int = 400,
) -> tuple[list[int], Outcome, int]:
    """Iterated local search: polish to a local optimum (always to the end, whatever the
    budget), then repeatedly kick the best plan (move one to three short random runs of
    layers to random usable resources) and polish again, keeping improvements. The kicks
    stop when `budget` is spent or after `patience` kicks in a row that found nothing better.
    Returns (assignment, outcome, kicks that improved)."""
    rng = np.random.default_rng(seed)
    to_the_end = SearchBudget()
    best, best_out, _ = polish(costs, mask, assignment, outcome, to_the_end)
    budget.first_polish = to_the_end.used
    wins = 0
    idle = 0
    n = len(best)
    while not budget.spent() and idle < patience:
        candidate = list(best)
        for _ in range(int(rng.integers(1, 4))):
            first = int(rng.integers(0, n))
            # Mostly short runs: the optimum's small stages are what first improvement misses.
            last = min(n - 1, first + int(rng.geometric(0.5)) - 1)
            usable = np.flatnonzero(mask[first : last + 1].all(axis=0))
            if usable.size:
                candidate[first : last + 1] = [int(rng.choice(usable))] * (last - first + 1)
        out = costs.outcome(candidate)
        budget.spend()
        candidate, out, _ = polish(costs, mask, candidate, out, budget)
        if better(out, best_out):
            best, best_out = candidate, out
            wins += 1
            idle = 0
        else:
            idle += 1
    return best, best_out, wins
