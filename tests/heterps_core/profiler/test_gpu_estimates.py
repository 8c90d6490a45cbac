"""GPU estimates (issues 18, 21): the published figures and the zoo size they are, the
precision flag, and what `heterps profile --device cuda:0` says on a machine without CUDA."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from heterps_core.cli import main
from heterps_core.hardware import default_catalogue
from heterps_core.hardware.published import PUBLISHED, counted, published_kind
from heterps_core.profiler import ProfileError, ProfileOptions
from heterps_core.profiler.models import estimate_zoo_model
from heterps_core.zoo import get
from heterps_core.zoo.base import chain_of
from heterps_core.zoo.sizes import sizes_of


def test_every_published_figure_names_its_source_and_a_zoo_size_we_have():
    catalogue = default_catalogue()
    assert len(counted()) >= 8
    for figure in PUBLISHED:
        assert figure.source and figure.samples_per_s > 0 and figure.batch_size > 0
        assert figure.size in sizes_of(figure.model)  # the planner's own model
        kind = published_kind(figure, catalogue)
        assert kind.precision == figure.precision and kind.kind == "gpu"
        assert figure.counted or figure.note, "a figure left out says why"


def test_the_published_size_is_the_readme_configuration():
    model_def = get("dlrm")
    config = model_def.config("criteo-1tb")
    assert len(config.vocab_sizes) == 26 and config.embedding_dim == 128
    assert config.extra["bottom"] == (512, 256) and config.hidden == (1024, 1024, 512, 256)
    chain = chain_of(model_def, config)
    dense = sum(spec.parameters for spec in chain if not spec.is_sparse)
    bottom = 13 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128
    top_in = 128 + 27 * 26 // 2
    top = (top_in * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 512 + 512 + 512 * 256 + 256
           + 256 + 1)
    assert dense == bottom + top


@pytest.mark.slow
def test_estimate_of_the_published_dlrm_grows_with_batch_and_precision():
    catalogue = default_catalogue()
    v100 = catalogue.get("gpu-v100")

    def rate(kind, batch):
        return estimate_zoo_model("dlrm", kind, size="criteo-1tb", batch_size=batch,
                                  rows_cap=1000, threads=1).samples_per_s

    assert rate(v100, 2048) > rate(v100, 256)  # a GPU gets faster per sample at a larger batch
    a100 = catalogue.get("gpu-a100")
    assert a100.precision == "tf32"  # the default, as people train on an A100
    fp32, tf32, amp = (rate(replace(a100, precision=p), 2048) for p in ("fp32", "tf32", "amp"))
    assert fp32 < tf32 < amp


def test_cuda_device_without_cuda_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the GPU path is measured instead")
    with pytest.raises(ProfileError, match="no CUDA device on this machine"):
        ProfileOptions(device="cuda:0").check()
    code = main(["profile", "ctr_dnn", "--device", "cuda:0", "--target", "1000"])
    err = capsys.readouterr().err
    assert code == 2 and "--device cuda:0: no CUDA device on this machine" in err
    assert "Traceback" not in err


def test_profile_gpu_precision_flag(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = {}
    for precision in ("fp32", "tf32"):
        path = tmp_path / f"{precision}.json"
        code = main(["profile", "ctr_dnn", "--size", "tiny", "--threads", "1", "--warmup", "0",
                     "--repeats", "1", "--batch-size", "64", "--target", "1000",
                     "--gpu-precision", precision, "--out", str(path), "--force"])
        assert code == 0, capsys.readouterr().err
        out[precision] = json.loads(path.read_text())
        provenance = json.loads((tmp_path / f"{precision}.provenance.json").read_text())
        a100 = [f for f in provenance["compute_s"] if f["resource"] == "gpu-a100"]
        assert all(f["detail"]["precision"] == precision for f in a100)
    # fc1's matrix products run on TF32 tensor cores on an A100, not on a V100
    fc1 = {p: {layer["name"]: layer for layer in out[p]["layers"]}["fc1"]["compute_s"]
           for p in out}
    assert fc1["tf32"]["gpu-a100"] < fc1["fp32"]["gpu-a100"]
    assert fc1["tf32"]["gpu-v100"] == fc1["fp32"]["gpu-v100"]
    with pytest.raises(SystemExit) as info:  # argparse's own usage error
        main(["profile", "ctr_dnn", "--target", "1", "--gpu-precision", "int8"])
    assert info.value.code == 2
    assert "--gpu-precision: invalid choice: 'int8'" in capsys.readouterr().err


def test_profile_takes_each_models_own_sizes(tmp_path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "criteo.json"
    code = main(["profile", "dlrm", "--size", "criteo-1tb", "--threads", "1", "--warmup", "0",
                 "--repeats", "1", "--batch-size", "16", "--rows-cap", "100", "--target", "1",
                 "--out", str(path), "--force"])
    assert code == 0, capsys.readouterr().err
    layers = json.loads(path.read_text())["layers"]
    assert layers[0]["memory_gb"] > 90  # the planned tables are MLPerf's, uncapped
    code = main(["profile", "dlrm", "--size", "paddle", "--target", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "size must be one of tiny, small, production, criteo-1tb for model "\
        "'dlrm', got 'paddle'" in err


def test_gpu_check_without_cuda_says_so_and_measures_nothing(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; bench/gpu_check.py would measure it")
    script = Path(__file__).resolve().parents[3] / "bench" / "gpu_check.py"
    done = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert "no CUDA device on this machine" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
