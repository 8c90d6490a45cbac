import gzip
from pathlib import Path

import pytest
import torch

from heterps_core import zoo
from heterps_core.errors import HeterPSError
from heterps_core.zoo.criteo import hash_category, read_criteo
from heterps_core.zoo.data import generator, power_law_ids

SAMPLE = Path(__file__).parents[2] / "data" / "criteo_sample.tsv"


def test_power_law_ids_are_skewed_and_in_range():
    ids = power_law_ids(generator(0), (100_000,), 10_000)
    assert int(ids.min()) >= 0 and int(ids.max()) < 10_000
    counts = torch.bincount(ids, minlength=10_000).sort(descending=True).values
    # The 1% hottest ids get a large share of lookups; uniform ids would get 1%.
    assert counts[:100].sum() / counts.sum() > 0.3
    assert int((counts > 0).sum()) > 2_000  # ...and there is a long tail


def test_batches_are_seeded():
    model = zoo.get("ctr_dnn")
    config = model.config("tiny")
    a, la = next(model.batches(config, 32, seed=5))
    b, lb = next(model.batches(config, 32, seed=5))
    c, _ = next(model.batches(config, 32, seed=6))
    assert torch.equal(a["sparse"], b["sparse"]) and torch.equal(la, lb)
    assert not torch.equal(a["sparse"], c["sparse"])


@pytest.mark.parametrize("name", ["ctr_dnn", "two_tower", "dlrm"])
def test_labels_are_imbalanced(name):
    model = zoo.get(name)
    config = model.config("tiny")
    _, labels = next(model.batches(config, 4000))
    assert 0.05 < float(labels.mean()) < 0.4


def test_criteo_reader_streams_batches_of_the_ctr_dnn_layout():
    vocab = (1000,) * 26
    batches = list(read_criteo(SAMPLE, 16, vocab))
    rows = sum(1 for line in SAMPLE.read_text().splitlines() if line.strip())
    assert sum(len(labels) for _, labels in batches) == rows
    inputs, labels = batches[0]
    assert inputs["dense"].shape == (16, 13) and inputs["sparse"].shape == (16, 26)
    assert set(labels.tolist()) <= {0.0, 1.0}
    assert int(inputs["sparse"].min()) >= 0 and int(inputs["sparse"].max()) < 1000
    model_def = zoo.get("ctr_dnn")
    config = model_def.config("tiny")
    model = model_def.build(config.__class__(vocab_sizes=vocab, embedding_dim=10,
                                             hidden=(32,), extra=config.extra))
    assert model(inputs).shape == (16,)


def test_criteo_reader_parses_values(tmp_path):
    line = "\t".join(["1", "3", "", "-1", *["0"] * 10, "68fd1e64", "", *["a"] * 24])
    path = tmp_path / "one_line.tsv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(line + "\n")
    ((inputs, labels),) = list(read_criteo(path, 8, (50,) * 26))
    assert labels.tolist() == [1.0]
    assert inputs["dense"][0, :3].tolist() == pytest.approx([1.3862944, 0.0, 0.0])
    assert int(inputs["sparse"][0, 1]) == 0  # missing -> row 0
    assert int(inputs["sparse"][0, 0]) == hash_category("68fd1e64", 50) == 1 + 0x68FD1E64 % 49


def test_criteo_reader_names_the_bad_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    good = SAMPLE.read_text().splitlines()[0]
    bad.write_text(good + "\n" + "1\t2\t3\n")
    with pytest.raises(HeterPSError, match=r"bad\.tsv:2: expected 40 tab-separated columns, got 3"):
        list(read_criteo(bad, 8, (10,) * 26))
    bad.write_text(good.replace("1", "x", 1) + "\n")
    with pytest.raises(HeterPSError, match=r"bad\.tsv:1: label must be 0 or 1"):
        list(read_criteo(bad, 8, (10,) * 26))


def test_criteo_reader_reports_a_missing_file(tmp_path):
    with pytest.raises(HeterPSError, match="cannot read file"):
        list(read_criteo(tmp_path / "missing.tsv", 8, (10,) * 26))
