"""Dollar differences carry their sign before the dollar sign (issue 25.11: "$-1.200")."""

from __future__ import annotations

from django.template import Context, Template

from webapp.costs.templatetags.money import signed_usd


def test_signs_go_before_the_dollar() -> None:
    assert signed_usd(-1.2) == "\u2212$1.200"
    assert signed_usd(0.12) == "+$0.120"
    assert signed_usd(0.0) == "\u00b1$0.000" and signed_usd(-0.0001) == "\u00b1$0.000"
    assert signed_usd(-1234.5, 2) == "\u2212$1,234.50"
    assert signed_usd(None) == "\u2013"


def test_the_replan_card_never_prints_dollar_minus() -> None:
    page = Template("{% load money %}{{ d|signed_usd }} per hour").render(Context({"d": -1.2}))
    assert page == "\u2212$1.200 per hour" and "$-" not in page
