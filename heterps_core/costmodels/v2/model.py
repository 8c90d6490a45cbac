"""Cost model v2 behind the interface (docs/cost-model.md "Cost model v2")."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from heterps_core.costmodels.base import CostModel, Options, UnitRun
from heterps_core.costmodels.v2.plans import build_plan, evaluate_v2, infeasible_v2
from heterps_core.costmodels.v2.server import Shards, server_need
from heterps_core.costmodels.v2.terms import StageTerms, stage_options
from heterps_core.plan import Plan, ServerPlacement


class JointModel(CostModel):
    """Sync mode, micro-batches and the parameter server: the stages that take turns share
    one time budget, so an assignment's units are chosen together (the label DP)."""

    version = 2
    stagewise = False

    @cached_property
    def terms(self) -> StageTerms:
        return StageTerms(self.instance)

    def evaluate(self, assignment: Sequence[str], scheduler: str = "evaluate") -> Plan:
        return evaluate_v2(self.instance, assignment, scheduler)

    def evaluate_with_shards(self, assignment: Sequence[str], resource: str, shards: int,
                             scheduler: str = "evaluate") -> Plan:
        role = self.instance.parameter_server
        if role is None or server_need(self.instance) is None:
            return super().evaluate_with_shards(assignment, resource, shards, scheduler)
        if resource not in role.hosts:
            return self.infeasible(scheduler, f"{resource!r} may not host the parameter server "
                                   f"(hosts: {', '.join(role.hosts)})", assignment)
        return evaluate_v2(self.instance, assignment, scheduler, Shards(resource, shards))

    def options(self, first: int, last: int, resource: str) -> Options | str:
        """With every unit of the instance available and the server's work per row left out
        (where the shards go is the search's choice)."""
        return stage_options(self.terms, first, last, resource)

    def price(self, runs: Sequence[UnitRun], server: ServerPlacement | None = None,
              scheduler: str = "evaluate") -> Plan:
        return build_plan(self.instance, runs, server, scheduler)

    def row_wait_s(self, first: int, last: int, resource: str,
                   server: ServerPlacement | None) -> float:
        terms = StageTerms(self.instance, server=server)
        return terms.row_wait(first, last, self.instance.resource(resource).bandwidth_bytes_per_s)

    def memory_split(self, first: int, last: int) -> tuple[float, float]:
        return self.terms.memory_gb(first, last)

    def infeasible(self, scheduler: str, reason: str,
                   assignment: Sequence[str] | None = None) -> Plan:
        return infeasible_v2(self.instance, scheduler, reason, assignment)
