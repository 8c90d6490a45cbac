from __future__ import annotations

import pytest

from heterps_core import zoo
from heterps_core.dataparallel import profile
from heterps_core.dataparallel.compression import VALUE_BYTES
from heterps_core.dataparallel.profiling import trimmed_mean, wire_s

from .conftest import config


def test_trimmed_mean_drops_outliers_at_both_ends() -> None:
    assert trimmed_mean([1.0, 1.0, 1.0, 1.0, 100.0], trim=0.2) == 1.0
    assert trimmed_mean([0.0, 2.0, 2.0, 2.0, 2.0], trim=0.2) == 2.0
    assert trimmed_mean([5.0]) == 5.0


def test_wire_time_is_latency_plus_bytes_over_bandwidth() -> None:
    cfg = config(bandwidth_gbps=8.0, latency_s=0.001)
    assert wire_s(1e9, cfg) == pytest.approx(1.001)


@pytest.mark.parametrize("pool", [True, False])
def test_profile_measures_every_worker_and_applies_slowdowns(pool: bool) -> None:
    model = zoo.get("ctr_dnn")
    cfg = config(slowdowns=(1.0, 2.0, 4.0), profile_pool=pool, profile_rounds=5)
    profiles = profile(model, model.config("tiny"), cfg)
    assert [p.worker for p in profiles] == [0, 1, 2]
    numel = sum(p.numel() for p in model.build(model.config("tiny")).parameters())
    for p in profiles:
        assert p.measured_s > 0 and p.batch_size == 64
        assert p.comm_s > wire_s(numel * VALUE_BYTES, cfg)  # wire time plus the measured copy
    ratios = [p.compute_s / profiles[0].compute_s for p in profiles]
    if pool:
        assert ratios == pytest.approx([1.0, 2.0, 4.0])
    else:  # each worker's own measurement, so 1x workers may differ by timing noise
        assert [p.compute_s for p in profiles] == [
            p.measured_s * s for p, s in zip(profiles, (1.0, 2.0, 4.0), strict=True)
        ]


def test_a_profile_for_another_number_of_workers_is_refused() -> None:
    from heterps_core.dataparallel import DataParallelError, modes, train

    model = zoo.get("ctr_dnn")
    two = profile(model, model.config("tiny"), config(workers=2, slowdowns=(), profile_rounds=2))
    with pytest.raises(DataParallelError, match="profile: has 2 workers, the job 3"):
        train(model, model.config("tiny"), modes.create("bsp"), config(), profile=two)
