"""One assignment's chain of stages: its cheapest unit counts (`evaluate`'s v2 provisioning,
and the exact search's re-choice of a bound's units).

The same bounds and label DP as the full search, seeded by two quick plans: the greedy unit
choice, and when that finds none, the least summed time under the caps (an exact DP over
units per resource), which proves the chain infeasible when even it misses the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heterps_core.costmodels.base import Options
from heterps_core.costmodels.common import REL_TOL
from heterps_core.costmodels.v2.label_search import LabelSearch
from heterps_core.costmodels.v2.labels import Solution
from heterps_core.costmodels.v2.server import Choice
from heterps_core.costmodels.v2.table import chain_table
from heterps_core.instance import Instance


class ChainSearch(LabelSearch):
    """The label search over one chain's options (one assignment)."""

    def _seed(self) -> bool:
        self._greedy()
        return self.best.solution is not None or self._fastest()

    def _fastest(self) -> bool:
        """One assignment's chain: the unit choice with the least summed time per sample under
        the caps (a small exact DP over units per resource: stages on different resources
        share nothing else). It is a plan when it meets the time budget; False when even the
        least time cannot (a proof that the chain is infeasible)."""
        t = self.table
        names = self.instance.resource_names
        micro = self.instance.micro_batches
        ends = np.append(t.starts[1:], t.size)
        chosen: list[int] = []
        total = 0.0
        top = 0.0
        for r, name in enumerate(names):
            stages = [c for c in range(t.starts.size) if int(t.res[t.starts[c]]) == r]
            if not stages:
                continue
            count = self.counts[name]
            best = np.full(count + 1, np.inf)  # least summed time using exactly u units
            best[0] = 0.0
            picks = []
            for c in stages:
                s, e = int(t.starts[c]), int(ends[c])
                new = np.full(count + 1, np.inf)
                arg = np.full(count + 1, -1)
                for o in range(s, e):
                    k = int(t.units[o])
                    if k > count:
                        continue
                    trial = np.full(count + 1, np.inf)
                    trial[k:] = best[: count + 1 - k] + float(self.relax.turn_a[o])
                    better = trial < new
                    new[better], arg[better] = trial[better], o
                best = new
                picks.append(arg)
                top = max(top, float(np.min(self.relax.turn_a[s:e])))
            u = int(np.argmin(best))
            if not np.isfinite(best[u]):
                return False
            total += float(best[u])
            for arg in reversed(picks):
                o = int(arg[u])
                chosen.append(o)
                u -= int(t.units[o])
        # no unit choice has a smaller sum, nor a smaller longest stage than `top`
        if total / micro + (1 - 1 / micro) * top > self.budget:
            return False
        chosen.sort(key=lambda o: int(t.first[o]))
        self.best.offer(self._direct(chosen))
        return True

    def _greedy(self) -> None:
        """The greedy unit choice of `greedy_units`."""
        t = self.table
        stages = sorted(range(t.starts.size), key=lambda c: int(t.first[t.starts[c]]))
        ends = np.append(t.starts[1:], t.size)
        chain = [
            Options(
                int(t.first[s]), int(t.last[s]), self.instance.resource_names[int(t.res[s])],
                bool(t.ahead[s]), t.units[s:e], t.cost[s:e], t.time_s[s:e], t.per_sample[s:e],
            )
            for s, e in ((int(t.starts[c]), int(ends[c])) for c in stages)
        ]
        found = greedy_units(self.instance, chain, self.counts)
        if found is None:
            return
        chosen = [int(t.starts[c]) + i for c, i in zip(stages, found, strict=True)]
        self.best.offer(self._direct(chosen))


def allocate(instance: Instance, choice: Choice, chain: list[Options]) -> Solution | None:
    """The cheapest unit counts for one chain of stages (caps and time budget respected),
    or None when none exists: `evaluate`'s v2 provisioning."""
    search = ChainSearch(instance, choice, chain_table(chain, instance.resource_names))
    search.bound(None)
    search.solve(None)
    return search.best.solution


def greedy_units(
    instance: Instance, opts: Sequence[Options], counts: dict[str, int]
) -> list[int] | None:
    """Option indices that fit the caps and the shared time budget, found by adding the unit
    step that buys the most time per dollar until the budget holds (None if it never does).
    A quick feasible plan, used as an upper bound; not necessarily the cheapest."""
    pick = [0] * len(opts)
    micro = instance.micro_batches
    budget = (1 / instance.throughput_target) * (1 + REL_TOL)

    def cycle(choice: list[int]) -> float:
        turns = [float(o.per_sample[i]) for o, i in zip(opts, choice, strict=True) if not o.ahead]
        return sum(turns) / micro + (1 - 1 / micro) * max(turns) if turns else 0.0

    def fits(choice: list[int]) -> bool:
        used: dict[str, int] = {}
        for o, i in zip(opts, choice, strict=True):
            used[o.resource] = used.get(o.resource, 0) + int(o.units[i])
        return all(u <= counts[r] for r, u in used.items())

    if not fits(pick):
        return None
    while cycle(pick) > budget:
        best: tuple[float, int] | None = None
        now = cycle(pick)
        for s, o in enumerate(opts):
            if o.ahead or pick[s] + 1 >= o.units.size:
                continue
            trial = list(pick)
            trial[s] += 1
            if not fits(trial):
                continue
            gain = (now - cycle(trial)) / float(o.cost[pick[s] + 1] - o.cost[pick[s]])
            if best is None or gain > best[0]:
                best = (gain, s)
        if best is None:
            return None
        pick[best[1]] += 1
    return pick
