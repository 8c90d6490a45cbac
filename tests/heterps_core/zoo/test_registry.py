import pytest

from heterps_core import zoo
from heterps_core.errors import HeterPSError
from heterps_core.zoo.base import ChainModel, ZooModel, chain_of

EXPECTED = {"ctr_dnn", "wide_deep", "deepfm", "dlrm", "two_tower", "two_emb", "skipgram_nce"}


def test_every_required_model_is_registered():
    assert set(zoo.names()) >= EXPECTED
    for name in zoo.names():
        model = zoo.get(name)
        assert isinstance(model, ZooModel)
        assert model.name == name
        assert model.default_batch_size > 0


def test_unknown_model_names_the_known_ones():
    with pytest.raises(HeterPSError, match=r"unknown model 'nope'.*ctr_dnn"):
        zoo.get("nope")


def test_register_rejects_a_second_class_with_the_same_name():
    class Clash(ZooModel):
        name = "ctr_dnn"
        description = "clash"

    with pytest.raises(ValueError, match="registered twice"):
        zoo.register(Clash)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_chain_starts_with_a_sharded_embedding_layer_followed_by_dense_layers(name):
    model = zoo.get(name)
    specs = chain_of(model, model.config("small"))
    assert specs[0].kind == "embedding" and specs[0].shardable
    assert all(s.kind == "dense" and not s.shardable for s in specs[1:])
    assert len({s.name for s in specs}) == len(specs)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_production_tables_are_tens_of_gigabytes(name):
    model = zoo.get(name)
    specs = chain_of(model, model.config("production"))  # meta device: nothing allocated
    table_gb = specs[0].parameters * 4 / 1e9
    assert 10 <= table_gb <= 200
    small = chain_of(model, model.config("small"))
    assert small[0].parameters * 4 / 1e9 < 0.1
    # Only the vocabulary changes between sizes: the dense layers are the same.
    assert [s.parameters for s in specs[1:]] == [s.parameters for s in small[1:]]


def test_ctr_dnn_has_the_paper_shape():
    model = zoo.get("ctr_dnn")
    config = model.config("small")
    assert len(config.vocab_sizes) == 26 and config.embedding_dim == 10
    assert config.hidden == (400, 400, 400)
    specs = chain_of(model, config)
    assert [s.name for s in specs] == ["embedding", "fc1", "fc2", "fc3", "out"]
    assert specs[0].parameters == sum(config.vocab_sizes) * 10
    assert specs[1].parameters == (13 + 26 * 10) * 400 + 400
    assert specs[4].parameters == 401


def test_chain_model_is_the_contract_type():
    model = zoo.get("dlrm")
    assert isinstance(model.build(model.config("tiny")), ChainModel)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_unknown_sizes_are_reported(name):
    with pytest.raises(HeterPSError, match="size must be one of tiny, small, production"):
        zoo.get(name).config("huge")
