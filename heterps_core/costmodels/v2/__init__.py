"""Cost model v2 (docs/cost-model.md "Cost model v2"): sync mode, micro-batches, sparse
traffic and the parameter server. `model.JointModel` is the interface's implementation; the
label DP that provisions one assignment (and that the exact search runs over every chain)
lives here too, below the schedulers: `labels` (the DP), `table` and `relax` (options priced at
once and their Lagrangian bounds), `bounds` and `chain_search` (bounding and searching one
server placement's stages)."""
