import pytest

from heterps_core.runtime.binding import Target, parse_binding, parse_target
from heterps_core.runtime.errors import RunConfigError


def test_targets_parse_with_thread_budgets_gpus_and_remote() -> None:
    assert parse_target("cpu") == Target("cpu", threads=1)
    assert parse_target("cpu:4") == Target("cpu", threads=4)
    assert parse_target("cuda:1") == Target("cuda", index=1)
    assert parse_target("remote").is_remote and not parse_target("remote").is_cuda
    assert parse_target("remote:cuda").is_cuda
    assert [str(parse_target(t)) for t in ("cpu", "cpu:4", "cuda:1", "remote:cuda")] == [
        "cpu",
        "cpu:4",
        "cuda:1",
        "remote:cuda",
    ]


def test_unnamed_types_default_to_the_local_cpu() -> None:
    binding = parse_binding("gpu-v100=cuda:0", ["cpu", "gpu-v100"])
    assert binding == {"cpu": Target("cpu"), "gpu-v100": Target("cuda", index=0)}


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("tpu=cpu", "bind.tpu", "no resource type 'tpu'"),
        ("cpu", "bind", "not RESOURCE=TARGET"),
        ("cpu=fpga", "bind.cpu", "unknown target 'fpga'"),
        ("cpu=cpu:0", "bind.cpu", "thread budget must be a positive whole number"),
        ("cpu=cuda:x", "bind.cpu", "GPU index"),
    ],
)
def test_bad_bindings_name_the_field_and_the_problem(text: str, field: str, words: str) -> None:
    with pytest.raises(RunConfigError) as info:
        parse_binding(text, ["cpu", "gpu"])
    assert info.value.field == field
    assert words in str(info.value)
