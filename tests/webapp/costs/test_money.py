"""Small dollar figures keep two significant digits instead of reading as zero."""

from __future__ import annotations

import pytest

from webapp.costs.templatetags.money import usd


@pytest.mark.parametrize(("value", "shown"), [
    (0.0, "0.0000"), (0.1511, "0.1511"), (12.5, "12.5000"), (0.0001, "0.0001"),
    (0.0000012, "0.0000012"), (0.000061234, "0.000061"), (-0.0000456, "-0.000046"),
    (None, "\u2013"),
])
def test_usd_keeps_significant_digits(value: float | None, shown: str) -> None:
    assert usd(value) == shown
