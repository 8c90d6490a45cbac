"""The samples the job page embeds for its charts, kept light (issue 25.10): a long run's
stored samples, each with every stage's figures, made the page heavy to send and slow to
parse on a loaded client.

Pipeline charts need each sample's step, time, throughput, loss and cost, and the stage
table only the latest sample's stages; data-parallel charts draw per-worker lines from
every sample's stages, so those keep them. Past `MAX_POINTS` samples the series is thinned
evenly (the first and the last kept): a chart 300 px high shows no more, and the CSV
export (`webapp.jobs.exports`) has every row.
"""

from __future__ import annotations

from typing import Any

from webapp.jobs.options import PIPELINE

MAX_POINTS = 600


def for_page(runner: str, series: list[dict[str, Any]],
             limit: int = MAX_POINTS) -> list[dict[str, Any]]:
    """`series` (oldest first) as the job page embeds it."""
    rows = thinned(series, limit)
    if runner != PIPELINE or not rows:
        return rows
    bare = [{k: v for k, v in row.items() if k != "stages"} for row in rows[:-1]]
    return [*bare, rows[-1]]


def thinned(series: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most `limit` rows, evenly spaced, the first and the last among them."""
    if len(series) <= limit or limit < 2:
        return series
    step = (len(series) - 1) / (limit - 1)
    return [series[round(i * step)] for i in range(limit)]
