"""Runtime benchmark: measured throughput vs the cost model's prediction, and vs a plain loop;
with `--startup`, the start-up of `heterps run` (launch to first finished mini-batch).

    .venv/bin/python bench/runtime.py [--models ctr_dnn,deepfm] [--steps 200] [--out FILE]
    .venv/bin/python bench/runtime.py --startup [--rounds 3] [--out FILE]

For each model: profile every layer on this machine (one thread; forward + backward + its
SGD update, fastest of several batches) and the gloo link between two processes (ping-pong
of one boundary activation), build a planning instance from that profile, price two plans
with the cost model (everything on one unit; embedding stage + dense stage, one unit each,
both bound to the local CPU), run each plan with the runtime in several sync modes and
micro-batch counts, and run the plain single-process loop on the same model, data and batch
size. Writes a markdown table.

`--startup` runs `heterps run` (a real command, a fresh process each time) for jobs of 1, 2
and 4 processes, with the job processes forked from the template (runtime/template.py) and
as fresh interpreters (HETERPS_FORKSERVER=0), alternated, best of `--rounds`; the number is
the command's own `command_startup_s`: from the command process's start to the first
finished mini-batch (the launcher's first-sample metric). It writes only its section of the
output file, between the markers below, and the throughput run keeps that section.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chain_plans import write_chain_plan  # noqa: E402
from heterps_core.costmodel import evaluate  # noqa: E402
from heterps_core.instance import Instance  # noqa: E402
from heterps_core.profiler.local import runtime_step_seconds  # noqa: E402
from heterps_core.profiler.loopback import loopback_gbps  # noqa: E402
from heterps_core.runtime import RunConfig, TrainSettings, launch, sync  # noqa: E402
from heterps_core.runtime.models import resolve_model  # noqa: E402
from heterps_core.runtime.reference import train_plain  # noqa: E402


@dataclass(frozen=True)
class LayerProfile:
    name: str
    kind: str
    seconds: float
    output_mb: float
    sync_mb: float
    memory_gb: float


def profile(train: TrainSettings, repeats: int) -> list[LayerProfile]:
    """Per-layer forward + backward + SGD update seconds per batch, one thread (layer 0
    also pays for producing the batch)."""
    seconds, outputs_mb = runtime_step_seconds(
        train.model, train.size, train.batch_size, threads=1, repeats=repeats,
        seed=train.seed, lr=train.lr)
    zoo = resolve_model(train.model)
    layers = list(zoo.build(zoo.config(train.size), seed=train.seed).layers)
    result = []
    for i, layer in enumerate(layers):
        dense = sum(p.numel() * 4 for n, p in layer.named_parameters() if not _is_table(layer, n))
        total = sum(p.numel() * 4 for p in layer.parameters())
        result.append(
            LayerProfile(
                name=layer.layer_name,
                kind=layer.kind,
                seconds=seconds[i],
                output_mb=outputs_mb[i],
                sync_mb=dense / 1e6,
                memory_gb=total / 1e9,
            )
        )
    return result


def _is_table(layer: torch.nn.Module, param_name: str) -> bool:
    module = layer.get_submodule(param_name.rpartition(".")[0]) if "." in param_name else layer
    return isinstance(module, torch.nn.Embedding | torch.nn.EmbeddingBag) and module.sparse


def link_gbps(megabytes: float, rounds: int = 50) -> float:
    """What a stage boundary costs on this machine: the profiler's gloo ping-pong between
    two local processes, one way."""
    return loopback_gbps(megabytes, rounds)


def instance_from(
    profile_: list[LayerProfile], batch_size: int, network_gbps: float
) -> Instance:
    names = ["cpu", "cpu-b"]
    return Instance.from_dict(
        {
            "version": 1,
            "name": "this machine",
            "batch_size": batch_size,
            "throughput_target": 1.0,
            "resources": [
                {
                    "name": n,
                    "kind": "cpu",
                    "price_per_hour": 0.5,
                    "count": 4,
                    "memory_gb": 64,
                    "network_gbps": network_gbps,
                }
                for n in names
            ],
            "layers": [
                {
                    "name": p.name,
                    "kind": p.kind,
                    "compute_s": {n: p.seconds for n in names},
                    "output_mb": p.output_mb,
                    "sync_mb": p.sync_mb,
                    "memory_gb": p.memory_gb,
                    "shardable": p.kind == "embedding",
                }
                for p in profile_
            ],
        }
    )


@dataclass(frozen=True)
class Row:
    model: str
    plan: str
    bounded: bool  # the sync mode drains every mini-batch: `flushed` is its bound
    sync: str
    micro: int
    predicted: float  # the cost model's throughput: stages overlap, the slowest one sets it
    flushed: float  # the same stage times run one after another: all a flushed pipeline gets
    measured: float
    plain: float

    @property
    def error(self) -> float:
        return (self.measured - self.predicted) / self.predicted * 100

    @property
    def flushed_error(self) -> float:
        return (self.measured - self.flushed) / self.flushed * 100

    @property
    def ratio(self) -> float:
        return self.measured / self.plain


@dataclass(frozen=True)
class Case:
    label: str
    stages: int
    sync: str
    micro: int


CASES = (
    Case("1 stage x 1 unit", 1, "bsp", 1),
    Case("2 stages x 1 unit (embedding / dense)", 2, "async", 1),
    Case("2 stages x 1 unit (embedding / dense)", 2, "bsp", 1),
    Case("2 stages x 1 unit (embedding / dense)", 2, "bsp", 2),
    Case("2 stages x 1 unit (embedding / dense)", 2, "bsp", 4),
)


def bench_model(
    model: str, size: str, batch_size: int, steps: int, repeats: int, rounds: int
) -> tuple[list[Row], float]:
    base = TrainSettings(model=model, size=size, steps=steps, batch_size=batch_size, lr=0.01)
    prof = profile(base, repeats)
    gbps = link_gbps(prof[0].output_mb)
    instance = instance_from(prof, batch_size, gbps)
    n = len(prof)
    plans = {
        1: evaluate(instance, ["cpu"] * n),
        2: evaluate(instance, ["cpu"] + ["cpu-b"] * (n - 1)),
    }
    rows = []
    for case in CASES:
        plan = plans[case.stages]
        assert plan.feasible and plan.throughput, plan.reason
        train = TrainSettings(
            model=model,
            size=size,
            steps=steps,
            batch_size=batch_size,
            lr=0.01,
            micro_batches=case.micro,
            sync=case.sync,
        )
        # The cores are shared: alternate plain loop and runtime, keep the best of each.
        measured, plain = 0.0, 0.0
        for _ in range(rounds):
            plain = max(plain, train_plain(base, threads=1).throughput)
            measured = max(measured, launch(RunConfig(plan=plan, train=train)).throughput)
        row = Row(
            model,
            case.label,
            sync.bound(plan, case.sync) is not None,
            case.sync,
            case.micro,
            plan.throughput,
            plan.flushed_throughput or 0.0,
            measured,
            plain,
        )
        rows.append(row)
        print(
            f"{model:<8} {case.label:<38} {case.sync:<5} x{case.micro}  predicted "
            f"{row.predicted:>7,.0f} ({row.error:+.1f}%)  flushed {row.flushed:>7,.0f}  "
            f"measured {measured:>7,.0f}  plain {plain:>7,.0f} ({row.ratio:.2f})",
            file=sys.stderr,
        )
    return rows, gbps


def write(
    rows: list[Row],
    links: dict[str, float],
    out: Path,
    command: str,
    seconds: float,
    load: str,
    repeats: int,
    rounds: int,
) -> None:
    link_text = ", ".join(f"{gbps:.1f} Gbit/s ({model})" for model, gbps in links.items())
    lines = [
        "# Runtime benchmark",
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC with `{command}` "
        f"({seconds:.0f} s).",
        "",
        f"Machine: {os.cpu_count()} CPU cores ({platform.processor() or platform.machine()}), "
        f"torch {torch.__version__}, gloo on loopback, one thread per process. "
        f"Load average at start: {load}.",
        "",
        "*Predicted*: the cost model's plan throughput for an instance built from a profile "
        "of this machine: per layer, forward + backward + SGD update of one batch on one "
        f"thread, fastest of {repeats} batches (other work on the machine only ever adds "
        "time), generating the batch counted in the first layer; boundary traffic at the "
        "bandwidth of a gloo ping-pong of one boundary "
        f"activation between two processes here: {link_text}. "
        "*Flushed*: the same stage times added up instead of overlapped - the most a "
        "pipeline that drains every mini-batch can reach. *Measured*: the runtime's steady "
        "samples/s (first to last finished mini-batch; process start-up excluded), best of "
        f"{rounds} runs. *Plain*: a single-process PyTorch loop (one thread) on the same "
        "model, data, batch size and optimiser, best of as many runs, alternated with the "
        "runtime's. Every resource type is bound to the local CPU; the parameter server is "
        "one more process.",
        "",
        "| model | plan | sync | micro-batches | predicted samples/s | measured samples/s "
        "| error | flushed samples/s | error vs flushed | plain loop samples/s "
        "| runtime / plain |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        vs_flushed = f"{r.flushed_error:+.1f}%" if r.bounded else "-"
        lines.append(
            f"| {r.model} | {r.plan} | {r.sync} | {r.micro} | {r.predicted:,.0f} | "
            f"{r.measured:,.0f} | {r.error:+.1f}% | {r.flushed:,.0f} | {vs_flushed} | "
            f"{r.plain:,.0f} | {r.ratio:.2f} |"
        )
    lines += [
        "",
        "Targets (issue 6): prediction error within 15%; runtime overhead over the plain loop "
        "at most 25% (ratio >= 0.80) for the one-unit-per-stage plans.",
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    kept = startup_section(out.read_text()) if out.exists() else ""
    out.write_text("\n".join(lines) + (f"\n{kept}\n" if kept else ""))


# --- start-up: `heterps run` from launch to its first finished mini-batch --------------------

STARTUP_BEGIN = "<!-- start-up: written by `python bench/runtime.py --startup` -->"
STARTUP_END = "<!-- /start-up -->"
# Every zoo model has sparse tables (a shard): the one-process job is a plain MLP factory.
MLP = "heterps_bench_mlp:mlp"
MLP_MODULE = '''from torch import nn


def mlp():
    return nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 1), nn.Flatten(0))


mlp.example_input = "float32[256,13]"
'''


@dataclass(frozen=True)
class StartupCase:
    processes: int
    label: str
    model: str
    stages: int
    shards: int  # 0: the model has no sparse tables, so no parameter server


STARTUP_CASES = (
    StartupCase(1, "an MLP factory (`module:function`, no sparse tables), 1 stage", MLP, 1, 0),
    StartupCase(2, "ctr_dnn, 1 stage + 1 parameter-server shard", "ctr_dnn", 1, 1),
    StartupCase(4, "ctr_dnn, 2 stages (embedding / dense) + 2 shards", "ctr_dnn", 2, 2),
)


def startup_plan(case: StartupCase, size: str, folder: Path) -> Path:
    """A v1 plan of `case.stages` one-unit stages for the model's layer chain."""
    return write_chain_plan(case.model, size, case.stages, 64,
                            folder / f"plan-{case.processes}.json")


def startup_once(
    case: StartupCase, plan: Path, size: str, steps: int, forked: bool, env: dict[str, str]
) -> float:
    """Seconds from the start of a `heterps run` process to its first finished mini-batch."""
    command = [sys.executable, "-m", "heterps_core", "run", str(plan), "--model", case.model,
               "--size", size, "--steps", str(steps), "--json"]
    command += ["--ps-shards", str(case.shards)] if case.shards else []
    env = dict(env, HETERPS_FORKSERVER="1" if forked else "0")
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    summary = json.loads(done.stdout)
    assert len(summary["processes"]) == case.processes, summary["processes"]
    return float(summary["command_startup_s"])


def bench_startup(size: str, steps: int, rounds: int) -> dict[int, tuple[float, float]]:
    """processes -> (best forked, best fresh), the two alternated on each round."""
    best: dict[int, list[float]] = {c.processes: [float("inf")] * 2 for c in STARTUP_CASES}
    with tempfile.TemporaryDirectory(prefix="heterps-startup-") as folder:
        Path(folder, "heterps_bench_mlp.py").write_text(MLP_MODULE)
        paths = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=paths)
        sys.path.insert(0, folder)  # for startup_plan's look at the model
        plans = {c.processes: startup_plan(c, size, Path(folder)) for c in STARTUP_CASES}
        for r in range(rounds):
            for case in STARTUP_CASES:
                for forked in ((True, False) if r % 2 == 0 else (False, True)):
                    seconds = startup_once(case, plans[case.processes], size, steps, forked,
                                           env)
                    slot = best[case.processes]
                    slot[0 if forked else 1] = min(slot[0 if forked else 1], seconds)
                    print(f"round {r + 1}: {case.processes} processes, "
                          f"{'template' if forked else 'fresh'}: {seconds:.1f} s "
                          f"(load {os.getloadavg()[0]:.2f})", file=sys.stderr)
    return {n: (a, b) for n, (a, b) in best.items()}


def startup_section(text: str) -> str:
    if STARTUP_BEGIN not in text or STARTUP_END not in text:
        return ""
    start = text.index(STARTUP_BEGIN)
    return text[start : text.index(STARTUP_END) + len(STARTUP_END)]


def write_startup(
    best: dict[int, tuple[float, float]], out: Path, command: str, seconds: float,
    loads: tuple[str, str], rounds: int,
) -> None:
    # The end's load counts the benchmark's own job processes; other work shows at the start.
    under_load = float(loads[0].split()[0]) > 1.0
    lines = [
        STARTUP_BEGIN,
        "## Start-up: `heterps run` to the first finished mini-batch",
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC with `{command}` "
        f"({seconds:.0f} s), {os.cpu_count()} CPU cores. Load average at start: {loads[0]}; "
        f"at end: {loads[1]} (the benchmark's own processes)."
        + (" **Taken under load** (other work shared the cores): a quiet machine is faster."
           if under_load else ""),
        "",
        "Seconds from the start of the `heterps run` process to its first finished "
        "mini-batch (its `--json` `command_startup_s`: the launcher's first-sample metric "
        "plus what came before the launcher started counting), best of "
        f"{rounds} runs, the two ways of starting alternated. *Template*: job processes "
        "forked from a process that imported torch and the zoo once (runtime/template.py; "
        "the default). *Fresh*: every job process a new interpreter importing torch "
        "(`HETERPS_FORKSERVER=0`). Every job counts the parameter-server shards among its "
        "processes; all bound to the local CPU, one thread each.",
        "",
        "| processes | job | template s | fresh interpreters s |",
        "|---:|---|---:|---:|",
    ]
    for case in STARTUP_CASES:
        forked, fresh = best[case.processes]
        lines.append(f"| {case.processes} | {case.label} | {forked:.1f} | {fresh:.1f} |")
    lines += ["", "Target (issue 23): under 10 s for 4 processes on a quiet machine.", STARTUP_END]
    text = out.read_text() if out.exists() else ""
    old = startup_section(text)
    section = "\n".join(lines)
    new = text.replace(old, section) if old else f"{text.rstrip()}\n\n{section}\n"
    out.write_text(new)


def main_startup(args: argparse.Namespace, command: str) -> int:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    start = time.perf_counter()
    best = bench_startup(args.size, args.startup_steps, args.rounds)
    end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    write_startup(best, Path(args.out), command, time.perf_counter() - start, (load, end),
                  args.rounds)
    print(startup_section(Path(args.out).read_text()))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="ctr_dnn,deepfm")
    parser.add_argument("--size", default="small")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=15, help="profiled batches per layer")
    parser.add_argument("--rounds", type=int, default=3, help="runs per plan (best counts)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "runtime.md"))
    parser.add_argument("--startup", action="store_true",
                        help="measure start-up of 1, 2 and 4 processes instead")
    parser.add_argument("--startup-steps", type=int, default=4, help="steps of each start-up run")
    args = parser.parse_args()
    command = "python bench/runtime.py " + " ".join(sys.argv[1:])
    if args.startup:
        return main_startup(args, command.strip())
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    start = time.perf_counter()
    rows: list[Row] = []
    links: dict[str, float] = {}
    for model in args.models.split(","):
        model_rows, links[model.strip()] = bench_model(
            model.strip(), args.size, args.batch_size, args.steps, args.repeats, args.rounds
        )
        rows += model_rows
    write(
        rows,
        links,
        Path(args.out),
        command.strip(),
        time.perf_counter() - start,
        load,
        args.repeats,
        args.rounds,
    )
    print(Path(args.out).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
