"""The one place that decides which cost model prices an instance: by its version."""

from __future__ import annotations

from heterps_core.costmodels.base import CostModel
from heterps_core.costmodels.chain import ChainCosts
from heterps_core.costmodels.v1 import StagewiseModel
from heterps_core.costmodels.v2.model import JointModel
from heterps_core.instance import Instance
from heterps_core.plan import Plan

MODELS: dict[int, type[CostModel]] = {model.version: model for model in (StagewiseModel,
                                                                         JointModel)}


def cost_model_for(instance: Instance, chain: ChainCosts | None = None) -> CostModel:
    """The model of the instance's version (`chain`: prefix sums already built for it)."""
    return MODELS[instance.version](instance, chain)


def cost_model_of(instance: Instance, plan: Plan) -> CostModel:
    """The model that priced `plan`: a v1 instance planned with a sync mode or micro-batches
    (`--sync`, `--micro-batches`) was read as v2 with the plan's settings."""
    if plan.cost_model != instance.version:
        instance = instance.as_v2(plan.sync, plan.micro_batches)
    return cost_model_for(instance)
