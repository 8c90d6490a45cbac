"""The vectorised stage table gives every stage exactly what `ChainCosts.provision` gives it."""

from __future__ import annotations

import pytest

from heterps_core.costmodel import ChainCosts
from heterps_core.generate import random_instance
from heterps_core.schedulers.stagetable import StageTable


@pytest.mark.parametrize(("seed", "caps"), [(s, c) for s in range(6) for c in (False, True)])
def test_matches_scalar_provisioning(seed: int, caps: bool) -> None:
    inst = random_instance(seed, 9, 4, caps=caps)
    # a higher target forces multi-unit stages and memory-bound ones too
    for target in (inst.throughput_target, inst.throughput_target * 5):
        inst_t = inst.with_target(target)
        table = StageTable(inst_t)
        costs = ChainCosts(inst_t)
        for stages in table.by_resource:
            res = inst_t.resource(stages.resource)
            for i in range(len(inst_t.layers)):
                for j in range(i, len(inst_t.layers)):
                    units = None
                    if costs.runs_on(i, j, res.name):
                        shape = costs.shape(i, j, res.name)
                        units = costs.provision(shape).units
                    got = int(stages.units[i, j])
                    assert got == (units or 0), (i, j, res.name)
                    if units:
                        assert stages.cost[i, j] == units * res.price_per_hour
                        assert stages.throughput[i, j] == shape.throughput(units, inst_t.batch_size)
