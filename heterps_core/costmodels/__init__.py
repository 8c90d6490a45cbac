"""The cost models behind one interface (`base.CostModel`), one chosen per instance by
`cost_model_for` (docs/cost-model.md). The package imports nothing above it: the
schedulers take a model, never the other way round."""

from heterps_core.costmodels.base import CostModel, Options, StageCost, UnitRun
from heterps_core.costmodels.factory import cost_model_for, cost_model_of

__all__ = ["CostModel", "Options", "StageCost", "UnitRun", "cost_model_for", "cost_model_of"]
