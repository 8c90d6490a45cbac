"""Ready for a lent GPU (issue 21 item 10): the GPU estimates against what `cuda:0` does.

    .venv/bin/python bench/gpu_check.py [--out DIR] [--quick]

One prepared script, through the `heterps` command line only (what a user would run):

1. Each model (ctr_dnn small, dlrm criteo-1tb at NVIDIA's batch 32,768 and dlrm small) is
   profiled on `cuda:0` as the catalogue kind of the GPU found (`--device-kind`), in fp32 and
   in tf32 (PyTorch's TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1), and `heterps estimate` gives the
   same model's estimate for that kind at that precision: measured against estimated, per
   layer and for the whole model.
2. A 2-stage plan, the embedding stage on this machine's CPU (`--include-local 1`) and the
   dense layers on the GPU kind, priced from the estimate (`heterps evaluate`), is run with
   the dense stage bound to `cuda:0` (`heterps run --bind KIND=cuda:0`): measured throughput
   against the plan's prediction, and against the prediction for what ran.

Without CUDA it stops at once with a clear message (exit status 2). Everything it runs and
prints lands in DIR (default: $OUT if set, else /tmp/gpu_check): the commands' JSON, and
gpu_check.md with the tables. The whole run takes a few minutes (--quick: smaller batches).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KIND = "gpu-here"  # the catalogue entry this script adds for the GPU it finds
DEVICE = "cuda:0"  # where the GPU's figures and the dense stage run
REPEATS: list[str] = []  # the profile's own repeats (until each median is known within 3%)
# GPUs by the words in torch.cuda.get_device_name, and the catalogue entry with their specs;
# changes for a variant our catalogue does not list (datasheet figures, cited).
GPUS: tuple[tuple[str, str, dict[str, float], str], ...] = (
    ("H200", "gpu-h100", {"memory_bandwidth_gbs": 4800.0, "memory_gb": 141.0},
     "H200 SXM datasheet: H100 compute (67 FP32, 494.7 TF32, 989.4 BF16 dense), 141 GB "
     "HBM3e at 4.8 TB/s"),
    ("H100", "gpu-h100", {}, ""),
    ("A100-SXM4-80GB", "gpu-a100", {"memory_bandwidth_gbs": 2039.0, "memory_gb": 80.0},
     "A100 80GB SXM datasheet: 2,039 GB/s"),
    ("A100", "gpu-a100", {}, ""),
    ("A10G", "gpu-a10g", {}, ""),
    ("V100", "gpu-v100", {}, ""),
    ("T4", "gpu-t4", {}, ""),
)
MODELS = (("ctr_dnn", "small", 1000), ("dlrm", "criteo-1tb", 32768), ("dlrm", "small", 2048))
PRECISIONS = ("fp32", "tf32")
# Threads of the CPU stage (local-1): half the host's cores, at most 4, leaving the rest to
# the GPU stage's process and the parameter server.
LOCAL_THREADS = max(1, min(4, (os.cpu_count() or 2) // 2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or "/tmp/gpu_check",
                        help="directory for the outputs (default: $OUT, else /tmp/gpu_check)")
    parser.add_argument("--quick", action="store_true", help="batches 8x smaller, fewer steps")
    parser.add_argument("--plumbing-on-cpu", metavar="GPU_NAME",
                        help="test the script without a GPU: every 'cuda:0' is the CPU and "
                             "the GPU found is GPU_NAME (the figures mean nothing)")
    args = parser.parse_args()
    import torch

    global DEVICE
    if args.plumbing_on_cpu:
        DEVICE = "cpu"
        REPEATS.extend(["--repeats", "2", "--max-repeats", "2"])
    elif not torch.cuda.is_available():
        print("bench/gpu_check.py: no CUDA device on this machine (torch.cuda.is_available() "
              "is False): run it where a GPU is lent; nothing was measured", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.plumbing_on_cpu or torch.cuda.get_device_name(0)
    catalogue_path, basis = _catalogue(name, out)
    started = time.perf_counter()
    lines = [f"# GPU check on {name} (`{DEVICE}`)", "",
             f"torch {torch.__version__}; estimates on `{KIND}` = {basis}.", ""]
    scale = 8 if args.quick else 1
    lines += _models(out, catalogue_path, scale)
    lines += _two_stages(out, catalogue_path, steps=100 if args.quick else 300)
    lines += ["", f"Total {time.perf_counter() - started:.0f} s. Command: `python "
              f"bench/gpu_check.py {' '.join(sys.argv[1:])}`."]
    report = out / "gpu_check.md"
    report.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {report}", file=sys.stderr)
    return 0


def _catalogue(device_name: str, out: Path) -> tuple[Path, str]:
    """The default catalogue plus KIND: the entry of the GPU found, with its variant's specs."""
    from heterps_core.hardware import Catalogue, ResourceKind, default_catalogue

    catalogue = default_catalogue()
    for word, base, changes, source in GPUS:
        if word.lower() in device_name.lower():
            spec = {**catalogue.get(base).to_dict(), **changes, "name": KIND,
                    "source": source or catalogue.get(base).source}
            kind = ResourceKind.from_dict(spec, where=KIND)
            path = out / "catalogue.json"
            Catalogue((*catalogue.kinds, kind)).save(path)
            return path, f"{base}{' with ' + source if source else ''}"
    known = ", ".join(word for word, *_ in GPUS)
    raise SystemExit(f"bench/gpu_check.py: {device_name!r} is none of the GPUs the catalogue "
                     f"has ({known}); add its entry to GPUS with its datasheet figures")


def _heterps(args: list[str], env: dict[str, str] | None = None,
             log: Path | None = None) -> str:
    """One `heterps` command; its stdout, or the run stops with its stderr."""
    command = [sys.executable, "-m", "heterps_core", *args]
    print("$ heterps " + " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, check=False)
    if log is not None:
        log.write_text(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"heterps {' '.join(args)} failed ({done.returncode}):\n"
                         f"{done.stderr[-3000:]}")
    return done.stdout


def _models(out: Path, catalogue: Path, scale: int) -> list[str]:
    lines = ["## Measured on cuda:0 against estimated, per model", "",
             "Measured: `heterps profile --device cuda:0 --device-kind gpu-here` (each layer "
             "forward + backward, median of repeats). Estimated: `heterps estimate ... "
             "--resource gpu-here` (rule operator-roofline-v2 from operator counts).", "",
             "| model | size | batch | precision | measured samples/s | estimated samples/s "
             "| estimate vs measured | worst layer (measured / estimated ms) |",
             "|---|---|---:|---|---:|---:|---:|---|"]
    for model, size, batch in MODELS:
        batch = max(batch // scale, 16)
        for precision in PRECISIONS:
            tag = f"{model}-{size}-{precision}"
            env = {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1" if precision == "tf32" else "0"}
            instance = out / f"{tag}.json"
            _heterps(["profile", model, "--size", size, "--batch-size", str(batch),
                      "--device", DEVICE, "--device-kind", KIND, "--resources",
                      str(catalogue), "--target", "1", "--force", "--out", str(instance),
                      *REPEATS],
                     env=env, log=out / f"{tag}.profile.log")
            measured = {layer["name"]: layer["compute_s"][KIND]
                        for layer in json.loads(instance.read_text())["layers"]}
            text = _heterps(["estimate", model, "--size", size, "--batch-size", str(batch),
                             "--resource", KIND, "--catalogue", str(catalogue),
                             "--precision", precision, "--threads", "8", "--json"])
            (out / f"{tag}.estimate.json").write_text(text)
            estimate = json.loads(text)
            estimated = {layer["name"]: layer["seconds"] for layer in estimate["layers"]}
            rate = batch / sum(measured.values())
            worst = max(measured, key=lambda k: abs(estimated[k] / measured[k] - 1))
            lines.append(
                f"| {model} | {size} | {batch:,} | {estimate['precision']} | {rate:,.0f} | "
                f"{estimate['samples_per_s']:,.0f} | {estimate['samples_per_s'] / rate - 1:+.1%} "
                f"| {worst} ({measured[worst] * 1e3:.3f} / {estimated[worst] * 1e3:.3f}) |")
    return lines


def _two_stages(out: Path, catalogue: Path, steps: int) -> list[str]:
    """ctr_dnn: embedding on this machine's CPU, dense layers on the GPU, priced and run."""
    instance = out / "two-stage.json"
    _heterps(["profile", "ctr_dnn", "--size", "small", "--threads", str(LOCAL_THREADS),
              "--include-local",
              "1", "--resources", str(catalogue), "--target", "1000", "--force", "--out",
              str(instance), *REPEATS], log=out / "two-stage.profile.log")
    layers = json.loads(instance.read_text())["layers"]
    assignment = ",".join("local-1" if layer["kind"] in ("embedding", "sparse") else KIND
                          for layer in layers)
    plan_text = _heterps(["evaluate", str(instance), "--assignment", assignment, "--sync",
                          "async", "--json"])
    plan_path = out / "two-stage.plan.json"
    plan_path.write_text(plan_text)
    plan: dict[str, Any] = json.loads(plan_text)
    run_text = _heterps(["run", str(plan_path), "--model", "ctr_dnn", "--size", "small",
                         "--steps", str(steps), "--bind",
                         f"{KIND}={DEVICE},local-1=cpu:{LOCAL_THREADS}",
                         "--json"], log=out / "two-stage.run.log")
    (out / "two-stage.run.json").write_text(run_text)
    run = json.loads(run_text)
    measured = run.get("throughput") or 0.0
    as_run = run.get("predicted_throughput_as_run") or 0.0
    predicted = plan.get("throughput") or 0.0
    return [
        "", "## A 2-stage plan with the dense stage on cuda:0 (ctr_dnn small, async)", "",
        f"Assignment {assignment} (embedding on this machine's CPU as `local-1`, dense on "
        f"`{KIND}` estimated); {steps} steps with `--bind "
        f"{KIND}={DEVICE},local-1=cpu:{LOCAL_THREADS}`.", "",
        "| predicted (estimated GPU stage) | measured | predicted vs measured | predicted for "
        "what ran | as-run vs measured |",
        "|---:|---:|---:|---:|---:|",
        f"| {predicted:,.0f} | {measured:,.0f} | {_error(predicted, measured)} | "
        f"{as_run:,.0f} | {_error(as_run, measured)} |",
        "", "Stages as run (busy ms per mini-batch, measured / the plan's): " + "; ".join(
            f"stage {s.get('stage')} on {s.get('bound_to')}: "
            f"{(s.get('measured_time_per_batch_s') or 0) * 1e3:.2f} / "
            f"{(s.get('predicted_time_per_batch_s') or 0) * 1e3:.2f}"
            for s in run.get("stages", [])),
    ]


def _error(predicted: float, measured: float) -> str:
    return f"{predicted / measured - 1:+.1%}" if measured > 0 else "-"


if __name__ == "__main__":
    raise SystemExit(main())
