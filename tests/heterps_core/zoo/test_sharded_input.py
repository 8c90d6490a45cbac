"""Each replica makes only its own mini-batches; the union over replicas is the one stream."""

import itertools
from pathlib import Path

import pytest
import torch

from heterps_core import zoo
from heterps_core.zoo.criteo import CriteoFormatError, criteo_held_out, criteo_stream
from heterps_core.zoo.data import held_out_batch, indexed_batches

SAMPLE = Path(__file__).parents[2] / "data" / "criteo_sample.tsv"


def same(a, b) -> bool:
    (ia, la), (ib, lb) = a, b
    return ia.keys() == ib.keys() and all(torch.equal(ia[k], ib[k]) for k in ia) and \
        torch.equal(la, lb)


@pytest.mark.parametrize("name", ["ctr_dnn", "two_tower", "skipgram_nce"])
@pytest.mark.parametrize("replicas", [2, 3])
def test_the_union_of_the_replicas_streams_is_the_single_stream(name, replicas):
    model = zoo.get(name)
    config = model.config("tiny")
    single = list(itertools.islice(indexed_batches(model, config, 16, seed=5), 12))
    for r in range(replicas):
        own = list(itertools.islice(
            indexed_batches(model, config, 16, seed=5, start=r, step=replicas), 12 // replicas
        ))
        for j, batch in enumerate(own):
            assert same(batch, single[r + j * replicas])
    # Mini-batches differ from each other, and a resumed replica starts where it left off.
    assert not same(single[0], single[1])
    resumed = next(indexed_batches(model, config, 16, seed=5, start=7, step=replicas))
    assert same(resumed, single[7])


def test_the_held_out_batch_is_fixed_and_not_a_training_batch():
    model = zoo.get("ctr_dnn")
    config = model.config("tiny")
    held = held_out_batch(model, config, 64, seed=1)
    assert same(held, held_out_batch(model, config, 64, seed=1))
    train = list(itertools.islice(indexed_batches(model, config, 64, seed=1), 5))
    assert not any(same(held, b) for b in train)


def test_criteo_replicas_parse_only_their_lines_and_union_to_the_file_loop():
    vocab = [1000] * 26
    single = list(itertools.islice(criteo_stream(SAMPLE, 10, vocab, skip=16), 9))
    # 48 training lines in a loop: mini-batch 4 is lines 40..47 then 0..1 of the loop.
    assert all(b[1].shape == (10,) for b in single)
    for r in range(2):
        own = list(itertools.islice(criteo_stream(SAMPLE, 10, vocab, start=r, step=2, skip=16), 4))
        for j, batch in enumerate(own):
            assert same(batch, single[r + 2 * j])
    held = criteo_held_out(SAMPLE, 16, vocab)
    assert held[1].shape == (16,)
    # The held-out lines are the file's first 16; training starts at line 17.
    first_train = next(criteo_stream(SAMPLE, 1, vocab, skip=16))
    assert same(first_train, next(criteo_stream(SAMPLE, 1, vocab, start=16)))


def test_criteo_file_without_training_lines_is_a_clear_error(tmp_path):
    path = tmp_path / "short.tsv"
    path.write_text(SAMPLE.read_text().splitlines(keepends=True)[0])
    with pytest.raises(CriteoFormatError, match="no training lines after the 1 held-out"):
        next(criteo_stream(path, 4, [10] * 26, skip=1))
    with pytest.raises(CriteoFormatError, match="fewer than the 5 held out"):
        criteo_held_out(path, 5, [10] * 26)
