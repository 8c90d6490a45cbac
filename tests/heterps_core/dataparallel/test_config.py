from __future__ import annotations

import math

import pytest

from heterps_core.dataparallel import DataParallelError, TrainConfig
from heterps_core.errors import HeterPSError


@pytest.mark.parametrize(
    ("settings", "field", "problem"),
    [
        ({"workers": 0}, "workers", "must be > 0"),
        ({"workers": 2.5}, "workers", "must be an integer"),
        ({"slowdowns": (1.0, 2.0)}, "slowdowns", "needs one factor per worker (3), got 2"),
        ({"slowdowns": (1.0, -2.0, 1.0)}, "slowdowns[1]", "must be > 0"),
        ({"slowdowns": (1.0, math.nan, 1.0)}, "slowdowns[1]", "finite"),
        ({"lr": 0}, "lr", "must be > 0"),
        ({"max_steps": None}, "duration_s", "never ends"),
        ({"duration_s": -1.0}, "duration_s", "must be > 0"),
        ({"stop_at_target": True}, "stop_at_target", "needs target_loss"),
        ({"bandwidth_gbps": 0.0}, "bandwidth_gbps", "must be > 0"),
        ({"jitter": -0.1}, "jitter", "must be >= 0"),
    ],
)
def test_bad_settings_name_the_field(settings: dict, field: str, problem: str) -> None:
    with pytest.raises(DataParallelError) as info:
        TrainConfig(**{"max_steps": 10, **settings})
    assert info.value.field == field
    assert problem in str(info.value)
    assert isinstance(info.value, HeterPSError)


def test_defaults_and_dict() -> None:
    cfg = TrainConfig(workers=2, max_steps=5)
    assert [cfg.slowdown(w) for w in range(2)] == [1.0, 1.0]
    data = cfg.to_dict()
    assert data["slowdowns"] == [1.0, 1.0] and data["duration_s"] is None
    assert cfg.bytes_per_s == 1e9 / 8
