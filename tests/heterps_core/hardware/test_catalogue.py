import json

import pytest

from heterps_core.errors import HeterPSError
from heterps_core.hardware import Catalogue, CatalogueError, ResourceKind, default_catalogue
from heterps_core.instance import Instance


def test_default_catalogue_has_cpu_servers_and_the_common_gpus():
    catalogue = default_catalogue()
    kinds = {k.kind for k in catalogue.kinds}
    assert kinds == {"cpu", "gpu"}
    names = " ".join(catalogue.names)
    for gpu in ("t4", "a10g", "v100", "a100", "h100"):
        assert gpu in names
    for kind in catalogue.kinds:
        assert kind.source, f"{kind.name} must say where its price comes from"
        assert kind.price_per_hour > 0 and kind.peak_tflops > 0
        assert kind.achievable_flops < kind.peak_tflops * 1e12


def test_gpus_have_more_bandwidth_and_cpus_more_memory():
    catalogue = default_catalogue()
    cpus = [k for k in catalogue.kinds if k.kind == "cpu"]
    gpus = [k for k in catalogue.kinds if k.kind == "gpu"]
    assert max(k.memory_gb for k in cpus) > max(k.memory_gb for k in gpus)
    small_cpus = [k for k in cpus if k.memory_gb <= 256]
    assert min(k.memory_bandwidth_gbs for k in gpus) > max(
        k.memory_bandwidth_gbs for k in small_cpus
    )


def test_round_trip_through_json(tmp_path):
    catalogue = default_catalogue()
    path = tmp_path / "catalogue.json"
    catalogue.save(path)
    assert Catalogue.load(path) == catalogue
    # A bare list of entries is accepted too.
    bare = [k.to_dict() for k in catalogue.kinds]
    assert Catalogue.from_dict(bare) == catalogue


def test_resources_form_a_valid_instance():
    catalogue = default_catalogue()
    data = {
        "version": 1, "batch_size": 10, "throughput_target": 1,
        "resources": [k.to_resource().to_dict() for k in catalogue.kinds],
        "layers": [{"name": "l", "kind": "dense", "compute_s": {catalogue.names[0]: 1.0},
                    "output_mb": 0, "sync_mb": 0, "memory_gb": 0, "shardable": False}],
    }
    assert Instance.from_dict(data).resource_names == catalogue.names


def _entry(**changes):
    entry = default_catalogue().kinds[3].to_dict()
    entry.update(changes)
    return entry


@pytest.mark.parametrize(
    ("entry", "field", "problem"),
    [
        (_entry(price_per_hour=-1), "resources[0].price_per_hour", "greater than 0"),
        (_entry(kind="tpu"), "resources[0].kind", "must be one of cpu, gpu"),
        (_entry(colour="red"), "resources[0].colour", "unknown field"),
        (_entry(compute_efficiency=1.5), "resources[0].compute_efficiency", "at most 1"),
        (_entry(count=2.5), "resources[0].count", "whole number"),
        (_entry(peak_tflops=float("nan")), "resources[0].peak_tflops", "must be finite"),
        (_entry(precision="fp8"), "resources[0].precision", "must be one of fp32, tf32, amp"),
        (_entry(tf32_tflops=-1), "resources[0].tf32_tflops", "must not be negative"),
        (_entry(gather_efficiency=0), "resources[0].gather_efficiency", "greater than 0"),
        ({k: v for k, v in _entry().items() if k != "memory_gb"}, "resources[0].memory_gb",
         "missing required field"),
    ],
)
def test_bad_entries_name_the_field(entry, field, problem):
    with pytest.raises(CatalogueError) as info:
        Catalogue.from_dict([entry])
    assert info.value.field == field
    assert problem in info.value.problem
    assert isinstance(info.value, HeterPSError)


def test_duplicate_names_and_empty_lists_are_rejected():
    with pytest.raises(CatalogueError, match="duplicate name"):
        Catalogue.from_dict([_entry(), _entry()])
    with pytest.raises(CatalogueError, match="non-empty list"):
        Catalogue.from_dict({"version": 1, "resources": []})


def test_unreadable_files_give_a_message(tmp_path):
    with pytest.raises(CatalogueError, match="cannot read file"):
        Catalogue.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    with pytest.raises(CatalogueError, match="not valid JSON"):
        Catalogue.load(bad)


def test_defaults_fill_in_efficiencies_by_kind():
    entry = {k: v for k, v in _entry().items()
             if k not in ("compute_efficiency", "bandwidth_efficiency", "kernel_overhead_us")}
    kind = ResourceKind.from_dict(json.loads(json.dumps(entry)))
    assert kind.compute_efficiency == 0.8 and kind.bandwidth_efficiency == 0.8
    assert kind.kernel_overhead_us == 8.0 and kind.gather_efficiency == 0.5
    assert kind.precision == "fp32"


def test_get_and_select():
    catalogue = default_catalogue()
    assert catalogue.get("gpu-a100").memory_gb == 40
    assert catalogue.select(["gpu-t4", "cpu-r6i.8xlarge"]).names == ["gpu-t4", "cpu-r6i.8xlarge"]
    with pytest.raises(CatalogueError, match="no kind named 'tpu'"):
        catalogue.get("tpu")


def test_precision_field_picks_the_matching_peak():
    from heterps_core.hardware.catalogue import effective_precision, with_precision

    catalogue = default_catalogue()
    a100, v100 = catalogue.get("gpu-a100"), catalogue.get("gpu-v100")
    assert (a100.peak_for("fp32"), a100.peak_for("tf32"), a100.peak_for("amp")) == (
        19.5, 156.0, 312.0)
    tf32 = with_precision(catalogue, "tf32")
    assert effective_precision(tf32.get("gpu-a100")) == "tf32"
    # a V100 has no TF32 tensor cores: PyTorch runs its matrix products in fp32
    assert effective_precision(tf32.get("gpu-v100")) == "fp32"
    assert effective_precision(with_precision(catalogue, "bf16").get("gpu-v100")) == "amp"
    assert v100.peak_for("amp") == 125.0
    cpu = with_precision(catalogue, "amp").get("cpu-c6i.8xlarge")
    assert cpu.precision == "fp32"  # CPUs keep fp32
    again = Catalogue.from_dict(json.loads(tf32.to_json()))
    assert again.get("gpu-a100").precision == "tf32"
    assert ResourceKind.from_dict({**_entry(), "precision": "bf16"}).precision == "amp"
    with pytest.raises(CatalogueError, match="precision"):
        with_precision(catalogue, "int8")


def test_default_precision_is_how_people_train_on_each_gpu():
    # Issue 21: tf32 on Ampere and later, fp32 where there are no TF32 tensor cores.
    precision = {k.name: k.precision for k in default_catalogue().kinds}
    assert precision["gpu-a10g"] == precision["gpu-a100"] == precision["gpu-h100"] == "tf32"
    assert precision["gpu-v100"] == precision["gpu-t4"] == "fp32"
    assert all(precision[k.name] == "fp32" for k in default_catalogue().kinds
               if k.kind == "cpu")


def _a100_entry(**changes):
    entry = default_catalogue().get("gpu-a100").to_dict()
    entry.update(changes)
    return entry


def test_an_entry_without_precision_gets_the_default_of_its_gpu():
    entry = {k: v for k, v in _a100_entry().items() if k != "precision"}
    assert ResourceKind.from_dict(entry).precision == "tf32"
    no_tf32 = {**entry, "tf32_tflops": 0.0}
    assert ResourceKind.from_dict(no_tf32).precision == "fp32"


def test_version_1_files_get_the_new_default_unless_they_chose_one():
    # Version 1 wrote "fp32" for every kind because it was the only default, not a choice.
    old = {"version": 1, "resources": [_a100_entry(precision="fp32"),
                                       _a100_entry(name="a100-amp", precision="amp"),
                                       _entry(name="t4", precision="fp32")]}
    catalogue = Catalogue.from_dict(old)
    assert [k.precision for k in catalogue.kinds] == ["tf32", "amp", "fp32"]
    # Version 2 (what `heterps catalogue` writes now) means what it says.
    chosen = Catalogue.from_dict({"version": 2, "resources": [_a100_entry(precision="fp32")]})
    assert chosen.kinds[0].precision == "fp32"
    assert json.loads(default_catalogue().to_json())["version"] == 2
    with pytest.raises(CatalogueError) as info:
        Catalogue.from_dict({"version": 3, "resources": [_a100_entry()]})
    assert info.value.field == "version" and "must be one of 1, 2" in info.value.problem
