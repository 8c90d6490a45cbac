"""bench/colocate.py: its co-located pipeline trains as the runtime's parts do, and its
report (issue 24 item 1's measurement of stages co-located in one process)."""

from __future__ import annotations

import re

import pytest

from tests import benches


def test_the_colocated_pipeline_on_the_shard_trains_as_on_torchs_embeddings() -> None:
    # The same async schedule (one step of staleness on the rows) with the rows on the
    # runtime's in-process shard or in torch's EmbeddingBag with SparseAdam: the same updates,
    # so the probe times the runtime's work, not a broken shortcut of it.
    colocate = benches.load_bench("colocate")
    train = colocate.settings("adam", 12, size="tiny")
    shard = colocate.colocated(train, 1, 2, shard=True)
    torch_rows = colocate.colocated(train, 1, 2, shard=False)
    assert len(shard.losses) == len(torch_rows.losses) == 12
    assert shard.losses == pytest.approx(torch_rows.losses, abs=1e-5)
    assert shard.losses[-1] < shard.losses[0]  # it trains
    assert shard.throughput > 0 and torch_rows.throughput > 0


@pytest.mark.slow
def test_the_colocate_bench_measures_every_shape_and_keeps_the_reading(tmp_path) -> None:
    colocate = benches.load_bench("colocate")
    out = tmp_path / "colocate.md"
    out.write_text(f"old figures\n{colocate.READING}\nkept by hand\n")
    code = colocate.main(["--size", "tiny", "--steps", "6", "--rounds", "1", "--optimizers",
                          "sgd", "--out", str(out)])
    assert code == 0
    text = out.read_text()
    assert "with `python bench/colocate.py --size tiny" in text
    assert "old figures" not in text and text.endswith(f"{colocate.READING}\nkept by hand\n")
    rows = re.findall(r"^\| (.+?) \| (\d+\.\d\d) \((\d+\.\d\d)\) \|$", text, re.M)
    assert [label for label, _, _ in rows] == [shape.label for shape in colocate.SHAPES]
    assert all(float(median) > 0 for _, median, _ in rows)
