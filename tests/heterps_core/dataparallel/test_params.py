from __future__ import annotations

import pytest

from heterps_core.dataparallel import DataParallelError
from heterps_core.dataparallel.params import Param, resolve

PARAMS = (Param("h", "int", 4, "period", 1, 100), Param("ef", "bool", True, "feedback"))


def test_resolve_overlays_defaults() -> None:
    assert resolve(PARAMS, {}, "m") == {"h": 4, "ef": True}
    assert resolve(PARAMS, {"h": "7", "ef": 0}, "m") == {"h": 7, "ef": False}
    assert resolve(PARAMS, {"h": 7.0}, "m")["h"] == 7


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"h": 0}, "m.h: must be >= 1, got 0"),
        ({"h": 101}, "m.h: must be <= 100, got 101"),
        ({"h": True}, "m.h: must be an integer, got True"),
        ({"x": 1}, "m.x: unknown parameter; known: ef, h"),
    ],
)
def test_resolve_refuses_with_field_and_problem(given: dict, message: str) -> None:
    with pytest.raises(DataParallelError, match=message.replace("(", r"\(")):
        resolve(PARAMS, given, "m")
