"""`heterps estimate`: the same figures `heterps profile` writes for the type, the JSON
contract, and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heterps_core.cli import main

QUICK = ["--size", "tiny", "--batch-size", "64", "--threads", "1"]


def _profile(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    path = tmp_path / "instance.json"
    code = main(["profile", "ctr_dnn", *QUICK, "--warmup", "0", "--repeats", "1",
                 "--target", "1000", "--out", str(path), "--force", *extra])
    assert code == 0, capsys.readouterr().err
    return json.loads(path.read_text())


def _estimate(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code = main(["estimate", "ctr_dnn", *QUICK, "--json", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(("resource", "precision"),
                         [("gpu-a100", None), ("gpu-v100", None), ("gpu-a100", "amp")])
def test_estimate_is_the_instance_profile_writes(tmp_path, capsys, resource, precision):
    extra = ["--gpu-precision", precision] if precision else []
    instance = _profile(tmp_path, capsys, *extra)
    per_layer = {layer["name"]: layer["compute_s"][resource] for layer in instance["layers"]}
    estimate = _estimate(capsys, "--resource", resource,
                         *(["--precision", precision] if precision else []))
    assert {layer["name"]: layer["seconds"] for layer in estimate["layers"]} == per_layer
    assert estimate["samples_per_s"] == pytest.approx(64 / sum(per_layer.values()), rel=1e-12)
    defaults = {"gpu-a100": "tf32", "gpu-v100": "fp32"}
    assert estimate["precision"] == (precision or defaults[resource])


def test_json_carries_operators_and_the_error_band(capsys):
    from heterps_core.hardware.accuracy import ESTIMATE_ERROR_BAND

    estimate = _estimate(capsys, "--resource", "gpu-h100")
    assert {"samples_per_s", "precision", "operators", "error_band"} <= set(estimate)
    assert estimate["error_band"] == ESTIMATE_ERROR_BAND and estimate["precision"] == "tf32"
    parts = {op["name"]: op for op in estimate["operators"]}
    assert set(parts) == {"gemm", "gather", "memory", "launch"}
    assert parts["gemm"]["flops"] > 0 and parts["gather"]["bytes"] > 0
    total = sum(op["seconds"] for op in estimate["operators"])
    assert total == pytest.approx(estimate["seconds_per_batch"], rel=1e-9)


def test_text_output_names_precision_and_band(capsys):
    from heterps_core.hardware.accuracy import ESTIMATE_ERROR_BAND

    code = main(["estimate", "ctr_dnn", *QUICK, "--resource", "gpu-t4"])
    out = capsys.readouterr().out
    assert code == 0
    first = out.splitlines()[0]
    assert "gpu-t4 (fp32)" in first and "samples/s" in first
    assert f"+/-{ESTIMATE_ERROR_BAND:.0%}" in first
    assert "gemm" in out and "launch" in out


def test_a_cpu_type_is_estimated_from_this_machine_without_a_band(capsys):
    estimate = _estimate(capsys, "--resource", "cpu-c6i.8xlarge", "--repeats", "1")
    assert estimate["error_band"] is None and "not validated" in estimate["error_band_basis"]
    assert estimate["samples_per_s"] > 0
    assert all(op["seconds"] is None for op in estimate["operators"])


def test_a_published_size_is_accepted(capsys):
    code = main(["estimate", "dlrm", "--size", "criteo-1tb", "--resource", "gpu-a100",
                 "--batch-size", "32", "--rows-cap", "100", "--threads", "1", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    estimate = json.loads(out)
    assert estimate["size"] == "criteo-1tb" and estimate["precision"] == "tf32"
    # 97 GiB of tables (plus optimizer state) on a 40 GB unit: said, not hidden
    assert any("holds 40 GB" in note for note in estimate["notes"])


@pytest.mark.parametrize(("args", "message"), [
    (["nosuch", "--resource", "gpu-a100"], "unknown model 'nosuch'"),
    (["ctr_dnn", "--size", "criteo-1tb", "--resource", "gpu-a100"],
     "size must be one of tiny, small, production, paddle for model 'ctr_dnn'"),
    (["ctr_dnn", "--resource", "gpu-z9"], "--resource: no resource type 'gpu-z9'"),
    (["ctr_dnn", "--resource", "gpu-a100", "--precision", "int8"],
     "--precision: must be one of fp32, tf32, amp"),
    (["ctr_dnn", "--resource", "cpu-c6i.8xlarge", "--precision", "amp"],
     "--precision: cpu-c6i.8xlarge is a cpu type"),
    (["ctr_dnn", "--resource", "gpu-a100", "--catalogue", "/nonexistent.json"],
     "/nonexistent.json: cannot read file"),
])
def test_bad_input_is_a_clear_error(capsys, args, message):
    code = main(["estimate", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_catalogue_file_sets_the_type(tmp_path, capsys):
    from dataclasses import replace

    from heterps_core.hardware import Catalogue, default_catalogue

    base = default_catalogue()
    slow = replace(base.get("gpu-a100"), name="gpu-slow", memory_bandwidth_gbs=100.0)
    path = tmp_path / "catalogue.json"
    Catalogue((*base.kinds, slow)).save(path)
    fast = _estimate(capsys, "--resource", "gpu-a100", "--catalogue", str(path))
    slower = _estimate(capsys, "--resource", "gpu-slow", "--catalogue", str(path))
    assert slower["samples_per_s"] < fast["samples_per_s"]
