"""Profiler accuracy: the sum of profiled layer times of a stage vs. the measured time of running
that stage's layers together (forward + backward), for every zoo model, on this CPU.

    .venv/bin/python bench/profiler.py                      # the documented run, writes the doc
    .venv/bin/python bench/profiler.py --quick --out -      # a smoke run, prints the tables
    .venv/bin/python bench/profiler.py --validate           # only the GPU validation table
                                                            # (issues 18, 21; rewrites that
                                                            # section; about 3 min)

A stage is every contiguous run of two or more layers. Layers and stages are timed in
interleaved rounds (one timed run of each per round, after warm-up rounds), so load from other
processes hits both sides of a comparison alike; each figure is the median over rounds. The
target is an error within 10% for stages of at least 1 ms.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heterps_core import zoo  # noqa: E402
from heterps_core.hardware.published import PublishedFigure  # noqa: E402
from heterps_core.profiler.chain import StageRunner, forward_context  # noqa: E402
from heterps_core.profiler.measure import CLOCKS, Measurement  # noqa: E402
from heterps_core.profiler.result import ModelProfile  # noqa: E402

MIN_STAGE_S = 1e-3
CLOCK_TEXT = {
    "cpu": "CPU time of the one thread doing the work, so time slices other processes take "
           "on this shared machine do not count",
    "wall": "elapsed time, which includes time slices other processes take",
}
TARGET = 0.10


@dataclass
class StageResult:
    model: str
    first: int
    last: int
    names: str
    summed_s: float
    measured: Measurement

    @property
    def error(self) -> float:
        return (self.summed_s - self.measured.median_s) / self.measured.median_s


def measure_model(name: str, size: str, batch_size: int | None, warmup: int,
                  rounds: int, clock: str) -> list[StageResult]:
    model_def = zoo.get(name)
    config = model_def.config(size)
    model = model_def.build(config, seed=0)
    batch_size = batch_size or model_def.default_batch_size
    inputs, labels = next(model_def.batches(config, batch_size, seed=0))
    context = forward_context(model, inputs)
    n = len(model.layers)
    units = [(i, i) for i in range(n)] + [(i, j) for i in range(n) for j in range(i + 1, n)]
    runners = {u: StageRunner(model, context, labels, *u) for u in units}
    samples: dict[tuple[int, int], list[float]] = {u: [] for u in units}
    timer = CLOCKS[clock]
    for r in range(warmup + rounds):
        for unit, runner in runners.items():
            state = runner.prepare()
            start = timer()
            runner.run(state)
            if r >= warmup:
                samples[unit].append(timer() - start)
    layer_median = {i: statistics.median(samples[(i, i)]) for i in range(n)}
    names = [layer.layer_name for layer in model.layers]
    return [
        StageResult(
            model=name, first=i, last=j, names=f"{names[i]}..{names[j]}",
            summed_s=sum(layer_median[k] for k in range(i, j + 1)),
            measured=Measurement.of(samples[(i, j)], warmup, clock),
        )
        for (i, j) in units if j > i
    ]


def summary_rows(results: list[StageResult]) -> list[str]:
    rows = []
    for name in dict.fromkeys(r.model for r in results):
        mine = [r for r in results if r.model == name]
        big = [r for r in mine if r.measured.median_s >= MIN_STAGE_S]
        if not big:
            rows.append(f"| {name} | {len(mine)} | 0 | - | - | - | - |")
            continue
        errors = [abs(r.error) for r in big]
        worst = max(big, key=lambda r: abs(r.error))
        within = sum(e <= TARGET for e in errors)
        spread = statistics.median(r.measured.spread for r in big)
        rows.append(
            f"| {name} | {len(mine)} | {len(big)} | {statistics.median(errors):.1%} | "
            f"{abs(worst.error):+.1%} ({worst.names}) | {within}/{len(big)} | {spread:.0%} |"
        )
    return rows


def detail_rows(results: list[StageResult]) -> list[str]:
    rows = []
    for r in results:
        whole_or_split = r.first == 0 or r.last == max(x.last for x in results
                                                        if x.model == r.model)
        if not whole_or_split:
            continue
        rows.append(
            f"| {r.model} | {r.names} | {r.summed_s * 1e3:.3f} | {r.measured.median_s * 1e3:.3f} "
            f"| {r.error:+.1%} | {r.measured.spread:.0%} |"
        )
    return rows


def render(results: list[StageResult], args: argparse.Namespace, started: str,
           load: tuple[str, str], elapsed: float) -> str:
    big = [r for r in results if r.measured.median_s >= MIN_STAGE_S]
    errors = sorted(abs(r.error) for r in big)
    overall = (f"Over all {len(big)} stages of at least 1 ms: median error "
               f"{statistics.median(errors):.1%}, worst {errors[-1]:.1%}, "
               f"{sum(e <= TARGET for e in errors)}/{len(big)} within {TARGET:.0%}."
               if big else "No stage took 1 ms or more.")
    command = "python bench/profiler.py " + " ".join(sys.argv[1:])
    return "\n".join([
        "# Profiler accuracy: sum of layer times vs. the stage run as one",
        "",
        f"Measured {started} UTC on `{platform.node() or 'this machine'}`: "
        f"{_cpu_model()}, {os.cpu_count()} cores shared with other work (load average "
        f"{load[0]} at the start, {load[1]} at the end), torch {torch.__version__}, "
        f"{args.threads} torch thread(s), clock `{args.clock}` ({CLOCK_TEXT[args.clock]}), "
        f"`{args.size}` model sizes, each model's default "
        f"batch size{'' if args.batch_size is None else f' overridden to {args.batch_size}'}. "
        f"{args.warmup} warm-up rounds, then {args.rounds} timed rounds; in each round every "
        "layer and every stage runs once (forward + backward, sparse embedding gradients), so "
        "background load hits both sides of each comparison alike. A figure is the median "
        f"over rounds. Total run time {elapsed:.0f} s.",
        "",
        f"Command: `{command}`",
        "",
        "Stages are all contiguous runs of two or more layers. Error = (sum of the layers' "
        "medians - the stage's median) / the stage's median. Spread = (p90 - p10) / median of "
        "the stage's samples: how noisy the machine was.",
        "",
        f"**{overall}** Target: within 10% for stages of at least 1 ms.",
        "",
        "| model | stages | stages >= 1 ms | median abs. error | worst error (stage) "
        "| within 10% | median spread |",
        "|---|---:|---:|---:|---|---:|---:|",
        *summary_rows(results),
        "",
        "## Prefix and suffix stages (the cuts a two-stage plan makes), of any duration",
        "",
        "| model | stage | sum of layers (ms) | stage measured (ms) | error | spread |",
        "|---|---|---:|---:|---:|---:|",
        *detail_rows(results),
        "",
    ])


def _cpu_model() -> str:
    from heterps_core.profiler.calibrate import _cpu_model as cpu_model

    return cpu_model()


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(zoo.names()))
    parser.add_argument("--size", default="small")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", default="cpu", choices=tuple(CLOCKS),
                        help="cpu: this thread's CPU time (needs --threads 1); wall: elapsed")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, few rounds")
    parser.add_argument("--validate", action="store_true",
                        help="only the GPU estimates of the zoo's models against published "
                             "figures (issues 18, 21); with --quick, 64x smaller batches")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "profiler.md"),
                        help="markdown file, or - for stdout")
    args = parser.parse_args()
    if args.clock == "cpu" and args.threads != 1:
        parser.error("--clock cpu needs --threads 1")
    if args.quick:
        args.size, args.rounds, args.warmup = "tiny", 5, 1
    torch.set_num_threads(args.threads)
    if args.validate:
        return write_validation(Path(args.out), quick=args.quick)
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")
    load_start = _load()
    t0 = time.perf_counter()
    results: list[StageResult] = []
    for name in args.models.split(","):
        print(f"{name} ...", file=sys.stderr, flush=True)
        results += measure_model(name, args.size, args.batch_size, args.warmup, args.rounds,
                                 args.clock)
    text = render(results, args, started, (load_start, _load()), time.perf_counter() - t0)
    old = Path(args.out).read_text() if args.out != "-" and Path(args.out).exists() else ""
    if VALIDATION_BEGIN in old:  # keep the GPU validation section of an earlier --validate run
        text += "\n" + VALIDATION_BEGIN + old.split(VALIDATION_BEGIN, 1)[1]
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


# ---- GPU estimates against published figures (issues 18, 21) ----

VALIDATION_BEGIN = "<!-- gpu validation: begin -->"
VALIDATION_END = "<!-- gpu validation: end -->"
GOAL = 0.25
SWEEP = (1024, 4096, 16384, 32768)
ACCEPTANCE = (("gpu-v100", "fp32"), ("gpu-a100", "tf32"), ("gpu-a100", "amp"))


def _profiles(keys: set[tuple[str, str, int]]) -> dict[tuple[str, str, int], ModelProfile]:
    """One count per (model, size, batch): the profile `heterps profile` takes (each layer
    timed once; a GPU figure needs only its operator counts)."""
    from heterps_core.profiler import ProfileOptions, profile_zoo_model

    profiles = {}
    for model, size, batch in sorted(keys):
        print(f"counting {model} {size} at batch {batch:,} ...", file=sys.stderr, flush=True)
        options = ProfileOptions(threads=torch.get_num_threads(), warmup=0, repeats=1,
                                 optimizer=zoo.get(model).default_optimizer)
        profiles[(model, size, batch)] = profile_zoo_model(model, options, size=size,
                                                           batch_size=batch)
    return profiles


def _residual(fig: PublishedFigure, error: float, parts: dict[str, float]) -> str:
    """Why this row's estimate differs from the published figure, in the row's own terms."""
    if fig.note:
        return f"not like with like: {fig.note}"
    total = sum(parts.values())
    share = {k: v / total for k, v in parts.items()}
    fused = ("XLA fuses elementwise chains" if "TensorFlow2" in fig.source
             else "fused kernels (26 lookups in one, dot interaction, MLP epilogues, sparse "
                  "SGD)")
    return (f"{'too slow' if error < 0 else 'too fast'}: {fused}; our eager count has "
            f"{share['memory']:.0%} elementwise/copy, {share['launch']:.0%} launches, "
            f"{share['gather']:.0%} gathers, {share['gemm']:.0%} products at 0.8 x "
            f"{fig.precision} peak")


def write_validation(out: Path, quick: bool = False) -> int:
    from heterps_core.hardware import default_catalogue
    from heterps_core.hardware.accuracy import ESTIMATE_ERROR_BAND
    from heterps_core.hardware.published import PUBLISHED, published_kind
    from heterps_core.profiler.models import estimate_profile

    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    scale = 64 if quick else 1  # a smoke run counts 64x smaller batches (errors meaningless)
    catalogue = default_catalogue()
    sweep = tuple(b // scale for b in SWEEP)
    keys = {(f.model, f.size, f.batch_size // scale) for f in PUBLISHED}
    keys |= {("dlrm", "criteo-1tb", b) for b in sweep}
    profiles = _profiles(keys)
    rows, counted, acceptance = [], [], []
    for fig in PUBLISHED:
        batch = fig.batch_size // scale
        kind = published_kind(fig, catalogue)
        est = estimate_profile(profiles[(fig.model, fig.size, batch)], kind)
        parts = {op.name: op.seconds or 0.0 for op in est.operators}
        error = est.samples_per_s / fig.samples_per_s - 1
        if fig.counted:
            counted.append((fig, error))
            if (fig.kind, fig.precision) in ACCEPTANCE and batch == 32768:
                acceptance.append(abs(error))
        verdict = ("yes" if abs(error) <= GOAL else "no") if fig.counted else "listed"
        ms = " / ".join(f"{parts[k] * 1e3:.1f}" for k in ("gemm", "memory", "gather", "launch"))
        rows.append(
            f"| {fig.gpu} | {est.precision} | {batch:,} | {fig.samples_per_s:,.0f} | "
            f"{est.samples_per_s:,.0f} | {100 * error:+.1f}% | {verdict} | {ms} | "
            f"{_residual(fig, error, parts)} | {fig.source} |"
        )
    sweep_rows = []
    for name, precision in ACCEPTANCE:
        kind = replace(catalogue.get(name), precision=precision)
        rates = [estimate_profile(profiles[("dlrm", "criteo-1tb", b)], kind).samples_per_s
                 for b in sweep]
        sweep_rows.append(f"| {name} {precision} | " + " | ".join(f"{r:,.0f}" for r in rates)
                          + " |")
    errors = [abs(e) for _, e in counted]
    worst_fig, worst = max(counted, key=lambda item: abs(item[1]))
    band = math.ceil(max(errors) * 20) / 20  # the largest counted |error|, up to the next 5%
    within = sum(e <= GOAL for e in errors)
    slow = sum(e < 0 for _, e in counted)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    command = "python bench/profiler.py " + " ".join(sys.argv[1:])
    lines = [
        VALIDATION_BEGIN,
        "## GPU estimates of the zoo's own models against published training throughput "
        "(issues 18, 21)",
        "",
        f"Generated by `{command}` on {started} UTC in {elapsed:.0f} s wall, {cpu:.0f} CPU-s "
        "(counting only: the estimates need no GPU and no timing). No GPU was lent to the "
        "session that ran it, so nothing here is measured on a GPU; the rows compare our "
        "estimate with published figures.",
        "",
        "**The planner's own model.** Each row estimates the zoo model at the zoo size that is "
        "the published configuration (`dlrm --size criteo-1tb`: 13 dense features, 26 tables "
        "of dim 128, bottom MLP 512-256-128, dot interaction, top MLP 1024-1024-512-256-1), "
        "exactly as `heterps estimate dlrm --size criteo-1tb --resource TYPE --precision P "
        "--batch-size B` does and as `heterps profile` writes it into an instance: the "
        "profile's operator counts priced by rule `operator-roofline-v2` on our catalogue "
        "entry for the GPU at the published precision (A100 80 GB rows with its 2,039 GB/s). "
        "Tables are capped at 100,000 rows for counting; a lookup moves the rows it reads "
        "whatever the table's size, so the published tables (Criteo 1TB with frequency "
        "threshold 15, 4.2B parameters) and our size (MLPerf's 40M-row cap, 204M rows) cost "
        "the same per sample; only memory differs.",
        "",
        f"**Result: {within} of {len(errors)} counted figures within {GOAL:.0%}; worst "
        f"{abs(worst):.1%} ({worst_fig.gpu}, {worst_fig.precision}, "
        f"{worst_fig.source.split(' (')[0]}); {slow} of {len(errors)} estimated too slow.** "
        "Acceptance (NVIDIA's V100 FP32, A100 TF32 and A100 AMP at batch 32,768): "
        f"{sum(e <= GOAL for e in acceptance)} of {len(acceptance)} rows within {GOAL:.0%}, "
        f"worst {max(acceptance, default=0.0):.1%}. The estimate's error band "
        f"(`heterps_core/hardware/accuracy.py`, shown with every estimated figure) is the "
        f"largest counted error rounded up to 5%: {band:.0%} (the constant is "
        f"{ESTIMATE_ERROR_BAND:.0%}). Listed rows are not one GPU holding the whole model, "
        "and say why.",
        "",
        f"| GPU | precision | batch | published samples/s | our estimate | error | within "
        f"{GOAL:.0%} | gemm / memory / gather / launch ms per batch | residual, per row | "
        "source |",
        "|---|---|---:|---:|---:|---:|---|---|---|---|",
        *rows,
        "",
        "**What is assumed, not fitted.** The GPU compute efficiency 0.8 (large cuBLAS "
        "products are commonly reported at 80-90% of the dense peak), the bandwidth "
        "efficiency 0.8 and the gather efficiency 0.5 (random embedding rows against "
        "streaming) are the catalogue's defaults since issue 18, unchanged by this "
        "validation; the kernel launch cost is 8 us. Every counted row errs on the same side "
        "when the model is counted operator by operator as our eager runtime runs it, "
        "while the published code fuses operators; that is the residual the rows name.",
        "",
        "**What the zoo model's count leaves out, and why** (issue 21): the profiler counts "
        "a layer's own forward and backward only. Its harness warms the cache by reading the "
        "layer's inputs and upstream gradients first (1.97 GB per batch at 32,768 over "
        "DLRM's 10 layers), and takes the inputs' gradients as computed instead of "
        "accumulating them into a leaf's `.grad` (which copied `interact`'s strided gradient "
        "for `emb`, about 2.2 GB per batch, a copy one unit running the whole model never "
        "makes; a cut's copies are the boundary's cost); allocations count no traffic. "
        "Counted with both (commit 9903606) the acceptance rows read V100 FP32 -22%, A100 "
        "TF32 -32%, A100 AMP -29%; with the chain's carried copies before issue 21, the "
        "zoo DLRM was 2.5x slower than the plain architecture on an A100.",
        "",
        "**Batch-size dependence** (estimated samples/s of `dlrm --size criteo-1tb`; fixed "
        "costs per batch, i.e. weights and kernel launches, are amortised over more samples, "
        "so throughput rises with the batch, as on real GPUs):",
        "",
        "| GPU | " + " | ".join(f"batch {b:,}" for b in sweep) + " |",
        "|---|" + "---:|" * len(sweep),
        *sweep_rows,
        "",
        "Not compared, and why: NVIDIA's Wide&Deep tables (DeepLearningExamples, "
        "TensorFlow) are for the Outbrain data set, whose features and embedding sizes "
        "differ from our Criteo-style `wide_deep`; NVIDIA's TensorFlow 2 CPU-offload row "
        "(1xA100-80GB + 2xEPYC 7742, 768k samples/s) is the 'extra large' model (113B "
        "parameters) with its largest tables on the CPU, which a plan would split into "
        "stages; MLPerf DLRM results are time-to-train on 8 or more GPUs; the Paddle CTR-DNN "
        "figures (about 9.4k samples/s per CPU thread locally, about 5k through a parameter "
        "server, ../shared/reference/background.md) are CPU threads, where our figures are "
        "measured on the host, not estimated (their accuracy is docs/benchmarks/as-run.md); "
        "CTR-DNN, DeepFM, two-tower, 2EMB and NCE have no published GPU training throughput "
        "we could find. `bench/gpu_check.py` measures ctr_dnn and dlrm on `cuda:0` against "
        "these estimates when a GPU is lent.",
        VALIDATION_END,
    ]
    section = "\n".join(lines) + "\n"
    if str(out) == "-":
        print(section)
        return 0
    text = out.read_text() if out.exists() else ""
    if VALIDATION_BEGIN in text and VALIDATION_END in text:
        head, rest = text.split(VALIDATION_BEGIN, 1)
        text = head + section.rstrip("\n") + rest.split(VALIDATION_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    out.write_text(text)
    print(f"wrote the GPU validation into {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
