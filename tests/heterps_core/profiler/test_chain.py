import json

import pytest
import torch

from heterps_core import zoo
from heterps_core.errors import HeterPSError
from heterps_core.profiler import (
    ModelProfile,
    ProfileError,
    ProfileOptions,
    StageRunner,
    profile_zoo_model,
)
from heterps_core.profiler.chain import forward_context
from heterps_core.profiler.models import capped

FAST = ProfileOptions(threads=1, warmup=1, repeats=3)


@pytest.fixture(scope="module")
def tiny_ctr():
    events = []
    torch.set_num_threads(1)
    profile = profile_zoo_model("ctr_dnn", FAST, size="tiny", batch_size=64,
                                progress=events.append)
    return profile, events


def test_every_layer_is_profiled_with_progress(tiny_ctr):
    profile, events = tiny_ctr
    assert [layer.name for layer in profile.layers] == ["embedding", "fc1", "fc2", "out"]
    assert [e.current for e in events] == [0, 1, 2, 3, 4]
    assert all(e.total == 4 for e in events)
    assert events[2].message == "layer fc1" and events[2].metrics["median_s"] > 0
    for layer in profile.layers:
        t = layer.time
        assert 0 < t.min_s <= t.median_s <= t.max_s and t.repeats == 3


def test_sizes_come_from_tensor_shapes(tiny_ctr):
    profile, _ = tiny_ctr
    emb, fc1, _, out = profile.layers
    assert emb.activation_bytes == 64 * (13 + 26 * 10) * 4
    assert fc1.activation_bytes == 64 * 64 * 4
    assert out.activation_bytes == 64 * 4
    assert profile.input_bytes == 64 * 13 * 4 + 64 * 26 * 8
    assert fc1.parameters == (13 + 260) * 64 + 64
    assert fc1.sync_bytes == fc1.parameter_bytes == fc1.parameters * 4
    assert emb.sync_bytes == 0  # sparse tables are not all-reduced
    assert fc1.optimizer_bytes == 3 * fc1.parameter_bytes  # Adam: gradient + two moments
    assert emb.optimizer_bytes == 2 * emb.parameter_bytes  # SparseAdam: two moments
    assert fc1.memory_bytes >= fc1.parameter_bytes + fc1.optimizer_bytes + fc1.activation_bytes


@pytest.mark.parametrize("name", ["dlrm", "deepfm", "wide_deep", "two_tower"])
def test_boundary_bytes_are_what_a_stage_sends(name):
    """Branched models: each layer's activation bytes are the packed tensor a cut after it
    sends (only what later layers read), and the tensors it packs are the ones read later."""
    model_def = zoo.get(name)
    config = model_def.config("tiny")
    torch.set_num_threads(1)
    profile = profile_zoo_model(name, FAST, size="tiny", batch_size=16)
    model = model_def.build(config)
    inputs, _ = next(model_def.batches(config, 16))
    x = inputs
    for i, layer in enumerate(profile.layers):
        x = model.run_layers(x, i, i)
        assert layer.activation_bytes == x.numel() * x.element_size()
        if i < len(profile.layers) - 1:
            later = {n for lay in model.chain[i + 1 :] for n in lay.reads}
            assert {n for n, _ in model.boundary(i)} <= later


def test_sparse_traffic_is_the_rows_a_batch_touches(tiny_ctr):
    profile, _ = tiny_ctr
    model_def = zoo.get("ctr_dnn")
    config = model_def.config("tiny")
    inputs, _ = next(model_def.batches(config, 64))
    offsets = torch.arange(26) * 100
    unique_rows = torch.unique(inputs["sparse"] + offsets).numel()
    assert profile.layers[0].sparse_bytes == 2 * unique_rows * 10 * 4
    assert all(layer.sparse_bytes == 0 for layer in profile.layers[1:])


def test_dense_layers_count_their_gemm_flops(tiny_ctr):
    profile, _ = tiny_ctr
    fc2 = profile.layers[2]
    assert fc2.ops.flops == 3 * 2 * 64 * 64 * 32
    assert profile.layers[0].ops.flops == 0 and profile.layers[0].ops.bytes > 0


def test_profile_round_trips_through_json(tiny_ctr):
    profile, _ = tiny_ctr
    again = ModelProfile.from_dict(json.loads(json.dumps(profile.to_dict())))
    assert again == profile
    assert profile.device.device == "cpu" and profile.device.threads == 1
    assert profile.measured_at.endswith("+00:00")
    assert profile.reference.flops_per_s > 0 and profile.reference.bytes_per_s > 0


def test_production_memory_is_planned_from_the_full_tables():
    options = ProfileOptions(threads=1, warmup=0, repeats=1)
    profile = profile_zoo_model("ctr_dnn", options, size="production", batch_size=32,
                                rows_cap=1000)
    emb = profile.layers[0]
    full = sum(zoo.get("ctr_dnn").config("production").vocab_sizes) * 10
    assert emb.parameters == full
    assert emb.memory_bytes / 1e9 > 100  # 62 GB of float32 plus SparseAdam state
    assert profile.rows_cap == 1000


def test_cpu_clock_profiles_record_their_clock():
    options = ProfileOptions(threads=1, warmup=0, repeats=2, clock="cpu")
    profile = profile_zoo_model("skipgram_nce", options, size="tiny", batch_size=16)
    assert {layer.time.clock for layer in profile.layers} == {"cpu"}
    assert all(layer.time.median_s > 0 for layer in profile.layers)


def test_capped_config_keeps_everything_but_the_rows():
    config = zoo.get("two_emb").config("production")
    small = capped(config, 500)
    assert small.vocab_sizes == (500, 500) and small.hidden == config.hidden


def test_stage_runner_computes_the_training_gradients():
    model_def = zoo.get("dlrm")
    config = model_def.config("tiny")
    model = model_def.build(config)
    inputs, labels = next(model_def.batches(config, 16))
    model.loss(model(inputs), labels).backward()
    expected = {name: p.grad.to_dense().clone() for name, p in model.named_parameters()}
    runner = StageRunner(model, forward_context(model, inputs), labels, 0,
                         len(model.layers) - 1)
    runner.run(runner.prepare())
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad.to_dense(), expected[name])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ProfileOptions(device="tpu"), "not a device"),
        (ProfileOptions(threads=0), "--threads must be at least 1"),
        (ProfileOptions(repeats=0), "--repeats"),
        (ProfileOptions(optimizer="lamb"), "--optimizer"),
        (ProfileOptions(clock="cpu", threads=2), "--clock cpu needs --device cpu --threads 1"),
        (ProfileOptions(clock="tsc"), "--clock must be one of"),
    ],
)
def test_bad_options_are_reported(options, message):
    with pytest.raises(ProfileError, match=message):
        options.check()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_missing_gpu_is_reported():
    with pytest.raises(ProfileError, match="no CUDA device on this machine"):
        ProfileOptions(device="cuda:0").check()


def test_bad_size_and_batch_are_reported():
    with pytest.raises(HeterPSError, match="size must be one of tiny, small, production"):
        profile_zoo_model("ctr_dnn", FAST, size="huge")
    with pytest.raises(ProfileError, match="--batch-size"):
        profile_zoo_model("ctr_dnn", FAST, size="tiny", batch_size=-4)
