"""Dollar figures that keep their significant digits: a tiny run's estimate of $0.0000012
printed with four decimals reads as zero next to an accrued $0.0016."""

from __future__ import annotations

import math

from django import template

register = template.Library()
PLACES = 4  # the usual decimals
SIGNIFICANT = 2  # kept below $0.0001


@register.filter
def usd(value: float | None) -> str:
    if value is None:
        return "\u2013"  # the pages' dash for "none"
    amount = float(value)
    if amount == 0 or abs(amount) >= 10 ** -PLACES:
        return f"{amount:.{PLACES}f}"
    places = -math.floor(math.log10(abs(amount))) + SIGNIFICANT - 1
    return f"{amount:.{places}f}"
