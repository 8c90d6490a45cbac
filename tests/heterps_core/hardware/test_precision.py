"""Planning at another precision (--precision): GPU figures re-priced from the profile's
operator counts, measured figures and CPUs left alone, a clear error without the profile."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from heterps_core.cli import main
from heterps_core.errors import InstanceError
from heterps_core.hardware.precision import at_precision, load_provenance
from heterps_core.instance import Instance


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("precision") / "ctr.json"
    code = main(["profile", "ctr_dnn", "--size", "tiny", "--threads", "1", "--warmup", "0",
                 "--repeats", "1", "--batch-size", "256", "--target", "1000",
                 "--device-kind", "gpu-t4", "--out", str(path), "--force"])
    assert code == 0
    return path


def test_gpu_figures_follow_the_precision_and_the_rest_stays(profiled: Path) -> None:
    instance = Instance.load(profiled)
    amp, notes = at_precision(instance, load_provenance(profiled), "amp")
    fp32, _ = at_precision(instance, load_provenance(profiled), "fp32")
    for before, cheap, slow in zip(instance.layers, amp.layers, fp32.layers, strict=True):
        assert cheap.compute_s["gpu-a100"] < before.compute_s["gpu-a100"]  # default tf32
        assert slow.compute_s["gpu-a100"] >= before.compute_s["gpu-a100"]  # = without gemm
        assert cheap.compute_s["cpu-c6i.8xlarge"] == before.compute_s["cpu-c6i.8xlarge"]
        assert cheap.compute_s["gpu-t4"] == before.compute_s["gpu-t4"]  # measured
    assert sum(x.compute_s["gpu-a100"] for x in fp32.layers) > sum(
        x.compute_s["gpu-a100"] for x in instance.layers)
    assert notes == ["gpu-t4: measured or given figures, kept at the precision they were "
                     "taken at"]
    same, _ = at_precision(instance, load_provenance(profiled), "tf32")
    assert [x.compute_s for x in same.layers] == [x.compute_s for x in instance.layers]


def test_evaluate_prices_the_plan_at_the_precision(profiled: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    layers = len(Instance.load(profiled).layers)
    assignment = ",".join(["gpu-a100"] * layers)
    rates = {}
    for precision in ("fp32", "amp"):
        code = main(["evaluate", str(profiled), "--assignment", assignment, "--json",
                     "--precision", precision])
        out, err = capsys.readouterr()
        assert code == 0, err
        rates[precision] = json.loads(out)["stages"][0]["time_per_batch_s"]
    assert rates["amp"] < rates["fp32"]


def test_without_the_profile_it_is_a_clear_error(profiled: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    lone = tmp_path / "lone.json"
    shutil.copy(profiled, lone)
    code = main(["plan", str(lone), "--precision", "amp"])
    err = capsys.readouterr().err
    assert code == 2 and "--precision: needs the profile behind the instance" in err
    assert "lone.provenance.json" in err and "Traceback" not in err
    code = main(["plan", str(profiled), "--precision", "fp8"])
    err = capsys.readouterr().err
    assert code == 2 and "--precision: must be one of fp32, tf32, amp" in err
    with pytest.raises(InstanceError):
        at_precision(Instance.load(profiled), load_provenance(profiled), "int4")
