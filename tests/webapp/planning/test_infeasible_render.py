"""An infeasible plan's stages (the heuristic's, when no unit count fits) say so, never
"None x t4" in the page (issue 25.11)."""

from __future__ import annotations

from django.template.loader import render_to_string


def test_a_stage_without_units_says_it_is_infeasible() -> None:
    plan = {"scheduler": "heuristic", "throughput": 0.0, "stages": [
        {"first": "embedding", "last": "fc3", "layers": 4, "units": None, "resource": "t4",
         "throughput": None}]}
    html = render_to_string("planning/_stage_diagram.html", {"p": plan})
    assert "None" not in html
    assert "t4: no units fit (infeasible)" in html and "\u2013 samples/s" in html


def test_a_feasible_stage_keeps_its_units() -> None:
    plan = {"scheduler": "exact", "throughput": 500.0, "stages": [
        {"first": "embedding", "last": "fc3", "layers": 4, "units": 2, "resource": "t4",
         "throughput": 500.0}]}
    html = render_to_string("planning/_stage_diagram.html", {"p": plan})
    assert "2 \u00d7 t4" in html and "500 samples/s" in html
