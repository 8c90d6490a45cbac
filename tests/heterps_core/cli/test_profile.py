"""`heterps profile` and `heterps catalogue`: real profiling runs and their error messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from heterps_core import schedulers
from heterps_core.cli import main
from heterps_core.hardware.catalogue import CATALOGUE_VERSION
from heterps_core.instance import Instance

# --force: these tests check other things, on a shared machine whose cores others may hold.
FAST = ["--threads", "1", "--warmup", "1", "--repeats", "2", "--force"]


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_profile_writes_an_instance_the_planner_accepts(tmp_path, capsys):
    out = tmp_path / "instance.json"
    code = main(["profile", "ctr_dnn", "--size", "tiny", "--batch-size", "64", *FAST,
                 "--target", "1000", "--samples", "1e6", "--out", str(out)])
    assert code == 0
    err = capsys.readouterr().err
    assert "4/4 layer out" in err and "wrote" in err
    instance = Instance.load(out)
    assert [layer.name for layer in instance.layers] == ["embedding", "fc1", "fc2", "out"]
    assert instance.throughput_target == 1000 and instance.batch_size == 64
    assert schedulers.create("exact").plan(instance).feasible
    provenance = json.loads((tmp_path / "instance.provenance.json").read_text())
    assert {f["source"] for f in provenance["compute_s"]} == {"estimated"}
    assert main(["evaluate", str(out), "--json",
                 "--assignment", ",".join(["cpu-r6i.8xlarge"] * 4)]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["feasible"]


def test_measured_kind_and_custom_catalogue(tmp_path, capsys):
    catalogue = tmp_path / "catalogue.json"
    assert main(["catalogue", "--out", str(catalogue)]) == 0
    data = json.loads(catalogue.read_text())
    data["resources"] = [r for r in data["resources"] if r["name"] in ("cpu-c6i.8xlarge",
                                                                       "gpu-t4")]
    data["resources"][0]["price_per_hour"] = 0.5
    catalogue.write_text(json.dumps(data))
    code = main(["profile", "two_tower", "--size", "tiny", "--batch-size", "32", *FAST,
                 "--resources", str(catalogue), "--device-kind", "cpu-c6i.8xlarge",
                 "--target", "500"])
    assert code == 0
    instance = Instance.from_json(capsys.readouterr().out)
    assert instance.resource_names == ["cpu-c6i.8xlarge", "gpu-t4"]
    assert instance.resource("cpu-c6i.8xlarge").price_per_hour == 0.5


def test_list_names_every_zoo_model(capsys):
    assert main(["profile", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("ctr_dnn", "wide_deep", "deepfm", "dlrm", "two_tower", "two_emb",
                 "skipgram_nce"):
        assert name in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--target", "1"], "unknown model 'nope'"),
        (["ctr_dnn"], "--target is required"),
        (["ctr_dnn", "--target", "1", "--threads", "0"], "--threads must be at least 1"),
        (["ctr_dnn", "--target", "1", "--device", "cuda:7"], "--device cuda:7"),
        ([], "name a zoo MODEL"),
        (["--import", "json:loads", "--target", "1"], "--import needs --example-input"),
        (["--import", "nowhere_pkg:make", "--example-input", "float32[2,2]", "--target", "1"],
         "cannot import 'nowhere_pkg'"),
        (["ctr_dnn", "--target", "1", "--spread", "2"], "--spread must be a fraction"),
        (["ctr_dnn", "--target", "1", "--repeats", "20", "--max-repeats", "5"],
         "--max-repeats (5) must be at least --repeats (20)"),
        (["ctr_dnn", "--target", "1", "--max-repeats", "100000"],
         "--max-repeats must be at most 10,000, got 100,000"),
    ],
)
def test_errors_are_messages_not_tracebacks(args, message, capsys):
    assert main(["profile", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_catalogue_names_the_field(tmp_path, capsys):
    bad = tmp_path / "c.json"
    entry = {"name": "x", "kind": "gpu", "peak_tflops": -1, "memory_bandwidth_gbs": 900,
             "memory_gb": 16, "network_gbps": 10, "price_per_hour": 1}
    bad.write_text(json.dumps([entry]))
    assert main(["profile", "ctr_dnn", "--target", "1", "--resources", str(bad)]) == 2
    assert "resources[0].peak_tflops: must be greater than 0" in capsys.readouterr().err


def test_bring_your_own_model(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_ctr.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(500, 8)
                self.fc1 = nn.Linear(4 + 3 * 8, 32)
                self.fc2 = nn.Linear(32, 1)

            def forward(self, dense, ids):
                x = torch.cat([dense, self.emb(ids).flatten(1)], dim=1)
                return self.fc2(torch.relu(self.fc1(x))).squeeze(1)

        def make():
            return Net()
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "mine.json"
    code = main(["profile", "--import", "my_ctr:make", "--example-input",
                 "dense=float32[16,4];ids=int64[16,3]<500", "--batch-size", "48", *FAST,
                 "--target", "100", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    instance = Instance.load(out)
    assert [(layer.name, layer.kind) for layer in instance.layers] == [
        ("emb", "embedding"), ("fc1", "dense"), ("fc2", "dense")]
    assert instance.batch_size == 48
    assert instance.layers[0].shardable and instance.layers[0].sync_mb == 0


def test_catalogue_to_stdout(capsys):
    assert main(["catalogue"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == CATALOGUE_VERSION and len(data["resources"]) >= 6


@pytest.fixture
def two_cpu_hogs():
    """Two busy processes sharing one core with this one (pinned where the OS allows it), so
    the profile's thread gets about a third of it whatever the machine's size and the
    scheduler's mood (unpinned on 2 cores, a short profile was once left alone)."""
    before = os.sched_getaffinity(0) if hasattr(os, "sched_setaffinity") else None
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        if before is not None:
            core = {min(before)}
            for pid in (0, *(hog.pid for hog in hogs)):
                os.sched_setaffinity(pid, core)
        time.sleep(0.5)
        yield
    finally:
        if before is not None:
            os.sched_setaffinity(0, before)
        for hog in hogs:
            hog.kill()
            hog.wait()


TIMED = ["ctr_dnn", "--size", "tiny", "--batch-size", "64", "--threads", "1", "--warmup", "1",
         "--repeats", "6", "--max-repeats", "30", "--target", "1000"]


def test_profile_refuses_figures_timed_while_others_held_the_cores(tmp_path, capsys,
                                                                   two_cpu_hogs):
    out = tmp_path / "instance.json"
    assert main(["profile", *TIMED, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "refusing to store this profile" in err and "of the cores' time" in err
    assert "--force" in err and "Traceback" not in err
    assert not out.exists()
    assert main(["profile", *TIMED, "--out", str(out), "--force"]) == 0
    err = capsys.readouterr().err
    assert "UNDER LOAD" in err and "stored anyway (--force)" in err
    instance = Instance.load(out)
    assert "(measured under load:" in instance.name
    provenance = json.loads((tmp_path / "instance.provenance.json").read_text())
    assert provenance["profile"]["under_load"] is True
    assert provenance["profile"]["cpu_use"]["held"] > 0.15


@pytest.mark.slow
def test_profile_shows_and_stores_each_figures_spread(tmp_path):
    out = tmp_path / "instance.json"
    # Its own process: --include-local times the loopback between two spawned processes,
    # and a spawn leaves multiprocessing's resource tracker running in the process that
    # asked (the runtime tests check that none of theirs outlive them).
    done = subprocess.run(
        [sys.executable, "-m", "heterps_core", "profile", *TIMED, "--spread", "0.5",
         "--include-local", "1", "--out", str(out), "--force"],
        capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "median ms per batch, +- its 95% spread" in err
    instance = Instance.load(out)
    profile = json.loads((tmp_path / "instance.provenance.json").read_text())["profile"]
    for layer, timed in zip(instance.layers, profile["layers"], strict=True):
        spread = timed["time"]["median_spread"]
        assert 6 <= timed["time"]["repeats"] <= 30 and spread is not None
        assert f"+-{spread:.1%}" in err  # the CLI shows the stored figure
        assert layer.compute_spread["local-1"] >= 0
        assert layer.compute_spread["cpu-c6i.8xlarge"] == spread  # scaled from it
