import math
from typing import Any

import pytest
import torch
from torch import nn

from heterps_core.zoo.imported import (
    ModelImportError,
    import_model,
    load_factory,
    parse_example_input,
)


class Ctr(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(100, 4)
        self.fc = nn.Linear(3 + 2 * 4, 8)
        self.out = nn.Linear(8, 1)

    def forward(self, dense, sparse):
        x = torch.cat([dense, self.emb(sparse).flatten(1)], dim=1)
        return self.out(torch.relu(self.fc(x))).squeeze(1)


class Skip(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        return self.b(self.a(x)) + x


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 6)
        self.b = nn.Linear(6, 2)

    def forward(self, x):
        h = self.a(x)
        if float(h.detach().sum()) > 1e9:  # torch.fx cannot trace a branch on a value
            h = h * 0
        return self.b(h)


class Tangled(DataDependent):
    def forward(self, x):
        if float(x.sum()) > 1e9:
            return x
        return self.b(self.a(x) * 2)  # the children alone do not reproduce this


def test_traced_model_splits_at_single_tensor_boundaries():
    model = Ctr()
    example = parse_example_input("float32[8,3];int64[8,2]<100", model)
    chain = import_model(model, example)
    assert [(layer.layer_name, layer.kind, layer.shardable) for layer in chain.layers] == [
        ("emb", "embedding", True), ("fc", "dense", False), ("out", "dense", False)]
    torch.testing.assert_close(chain(example), model(example["dense"], example["sparse"]))
    assert chain.layers[0].module.get_submodule("emb").sparse  # trained with sparse gradients
    # Parameter-free pieces (cat, relu, squeeze) joined a layer instead of becoming one.
    x = chain.run_layers(example, 0, 0)
    assert x.shape == (8, 11)


def test_untraceable_model_falls_back_to_its_children():
    model = DataDependent()
    example = parse_example_input("float32[5,4]", model)
    chain = import_model(model, example)
    assert [layer.layer_name for layer in chain.layers] == ["a", "b"]
    torch.testing.assert_close(chain(example), model(example["x"]))


def test_unsplittable_model_says_why_and_what_to_do():
    with pytest.raises(ModelImportError) as info:
        import_model(Skip(), parse_example_input("float32[5,4]", Skip()), "Skip")
    message = str(info.value)
    assert "cannot split Skip" in message and "skip connection" in message
    assert "What to do" in message and "nn.Sequential" in message
    with pytest.raises(ModelImportError, match=r"torch\.fx cannot trace it"):
        import_model(Tangled(), parse_example_input("float32[5,4]", Tangled()))


def test_example_input_specs():
    model = Ctr()
    inputs = parse_example_input("sparse=int64[4,2]<7; dense=float32[4,3]", model,
                                 batch_size=9)
    assert inputs["dense"].shape == (9, 3) and inputs["dense"].dtype == torch.float32
    assert inputs["sparse"].shape == (9, 2) and int(inputs["sparse"].max()) < 7
    with pytest.raises(ModelImportError, match="cannot read 'float32"):
        parse_example_input("float32(4,3)", model)
    with pytest.raises(ModelImportError, match="unknown dtype 'complex'"):
        parse_example_input("complex[4,3]", model)
    with pytest.raises(ModelImportError, match=r"no value for forward\(\) argument"):
        parse_example_input("dense=float32[4,3]", model)


def test_example_input_from_a_file(tmp_path):
    path = tmp_path / "example.pt"
    torch.save({"x": torch.ones(2, 4)}, path)
    assert torch.equal(parse_example_input(str(path), Skip())["x"], torch.ones(2, 4))
    torch.save(torch.zeros(3, 4), path)
    assert parse_example_input(str(path), Skip())["x"].shape == (3, 4)


def test_factories_are_checked():
    assert isinstance(load_factory("torch.nn:Identity"), nn.Identity)
    with pytest.raises(ModelImportError, match=r"must look like package\.module:factory"):
        load_factory("torch.nn.Identity")
    with pytest.raises(ModelImportError, match="has no attribute 'Nope'"):
        load_factory("torch.nn:Nope")
    with pytest.raises(ModelImportError, match=r"must be \(or return\) a torch\.nn\.Module"):
        load_factory("math:pi")


TABULAR = "heterps_core.zoo.examples.tabular:tabular_ctr"


def _factory_plan(n_layers: int, split: int) -> Any:
    """A plan of the real cost model: layers before `split` on `a`, the rest on `b`."""
    from heterps_core.costmodel import evaluate
    from heterps_core.instance import Instance

    names = ["a", "b"]
    instance = Instance.from_dict({
        "version": 1, "batch_size": 32, "throughput_target": 10.0,
        "resources": [{"name": n, "kind": "cpu", "price_per_hour": 1.0 + i, "count": 2,
                       "memory_gb": 16, "network_gbps": 10} for i, n in enumerate(names)],
        "layers": [{"name": f"l{i}", "kind": "dense", "compute_s": {n: 0.001 for n in names},
                    "output_mb": 0.01, "sync_mb": 0.01, "memory_gb": 0.01,
                    "shardable": False}
                   for i in range(n_layers)],
    })
    plan = evaluate(instance, ["a" if i < split else "b" for i in range(n_layers)])
    assert plan.feasible, plan.reason
    return plan


@pytest.mark.slow
def test_a_factory_model_trains_in_the_runtime_from_its_seeded_stream() -> None:
    """The web's own-model path end to end on real processes: the stage draws its
    mini-batches from a 63-bit per-batch seed (a seed torch's generator must accept)."""
    from heterps_core.runtime.launcher import RunConfig, launch
    from heterps_core.runtime.spec import TrainSettings
    from heterps_core.zoo.imported import FactoryModel

    model = FactoryModel(TABULAR)
    n_layers = len(model.build(model.config()).layers)
    assert n_layers >= 2
    result = launch(RunConfig(
        plan=_factory_plan(n_layers, 1),
        train=TrainSettings(model=TABULAR, size="small", steps=6, batch_size=32, seed=5,
                            lr=0.05, micro_batches=2, sync="bsp"),
    ))
    assert len(result.losses) == 6
    assert all(math.isfinite(loss) for loss in result.losses)
