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


@register.filter
def signed_usd(value: float | None, places: int = 3) -> str:
    """A difference in dollars with its sign before the dollar sign: "+$0.120",
    "\u2212$1.200" (a true minus; never "$-1.200"); "±$0.000" for none."""
    if value is None:
        return "\u2013"
    amount = float(value)
    text = f"${abs(amount):,.{int(places)}f}"
    if float(text[1:].replace(",", "")) == 0:
        return f"\u00b1{text}"
    return f"+{text}" if amount > 0 else f"\u2212{text}"
