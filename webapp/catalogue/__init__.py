"""The resource catalogue: resource types a project can plan with (CPU, GPU kinds, prices)."""
