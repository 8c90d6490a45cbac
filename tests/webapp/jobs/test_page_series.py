"""The job page embeds a light series (issue 25.10): a long run's samples thinned to
`MAX_POINTS`, the first and last kept, and a pipeline job's stage rows only on the latest
sample (its stage table); data-parallel samples keep theirs (per-worker lines)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from webapp.jobs import page_series, records, services
from webapp.jobs.services import RunOptions

pytestmark = pytest.mark.django_db


def _row(i: int) -> dict[str, Any]:
    return {"step": i, "total_steps": 5000, "elapsed_s": 0.5 * (i + 1), "samples_per_s": 400.0,
            "loss": 0.6, "cost": 0.001 * i, "stages": [{"stage": 1, "busy_share": 0.8}]}


def test_thinned_keeps_the_first_and_the_last_evenly() -> None:
    rows = [_row(i) for i in range(2000)]
    thin = page_series.thinned(rows, 600)
    assert len(thin) == 600 and thin[0] is rows[0] and thin[-1] is rows[-1]
    assert page_series.thinned(rows[:10], 600) == rows[:10]


def test_a_long_runs_job_page_embeds_a_light_series(
    login: Any, personas: Any, source: Any
) -> None:
    job = services.approve(personas.member, source, RunOptions(steps=5000))
    for i in range(1500):
        records.record_sample(job.pk, 1, _row(i), base_cost=0.0)  # type: ignore[arg-type]
    page = login(personas.member).get(f"/jobs/{job.pk}/").content.decode()
    embedded = page.split('id="job-series" type="application/json">')[1].split("</script>")[0]
    series = json.loads(embedded)
    assert len(series) == page_series.MAX_POINTS
    assert series[-1]["step"] == 1499 and series[-1]["stages"]
    assert all("stages" not in row for row in series[:-1])
    assert len(page) < 120_000, f"{len(page)} bytes"
