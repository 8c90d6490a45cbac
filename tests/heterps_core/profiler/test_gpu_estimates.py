"""GPU estimates (issue 18): the published configurations, the precision flag, and what
`heterps profile --device cuda:0` says on a machine without CUDA."""

from __future__ import annotations

import json

import pytest
import torch

from heterps_core.cli import main
from heterps_core.hardware import default_catalogue
from heterps_core.hardware.roofline import estimate_operators
from heterps_core.profiler import ProfileError, ProfileOptions
from heterps_core.profiler.published import (
    PUBLISHED,
    PublishedDLRM,
    count_published_dlrm,
    published_kind,
)


def test_every_published_figure_names_its_source_and_a_kind_we_have():
    catalogue = default_catalogue()
    assert len(PUBLISHED) >= 8
    for figure in PUBLISHED:
        assert "DeepLearningExamples" in figure.source and figure.samples_per_s > 0
        kind = published_kind(figure, catalogue)
        assert kind.precision == figure.precision and kind.kind == "gpu"


def test_published_dlrm_is_the_readme_configuration():
    model = PublishedDLRM(rows=10)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    sizes = [(m.in_features, m.out_features) for m in linears]
    assert sizes[:3] == [(13, 512), (512, 256), (256, 128)]
    assert sizes[3:] == [(128 + 27 * 26 // 2, 1024), (1024, 1024), (1024, 512), (512, 256),
                         (256, 1)]
    assert len(model.tables) == 26 and model.tables[0].embedding_dim == 128


def test_estimate_of_the_published_dlrm_grows_with_batch_and_precision():
    catalogue = default_catalogue()
    small, large = count_published_dlrm(256), count_published_dlrm(2048)
    assert large.flops == pytest.approx(8 * small.flops, rel=0.01)
    v100 = published_kind(PUBLISHED[0], catalogue)
    rate = [b / estimate_operators(c, v100).seconds for b, c in ((256, small), (2048, large))]
    assert rate[1] > rate[0]  # a GPU gets faster per sample at a larger batch
    a100 = catalogue.get("gpu-a100")
    tf32 = estimate_operators(large, published_kind(PUBLISHED[4], catalogue))
    assert tf32.seconds < estimate_operators(large, a100).seconds


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
                     "--gpu-precision", precision, "--out", str(path)])
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
