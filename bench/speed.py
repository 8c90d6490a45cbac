"""Runtime speed benchmark (issue 24 item 7): our runs of CTR-DNN against the plain loop.

    .venv/bin/python bench/speed.py [--rounds 3] [--steps 200] [--quick] [--no-profile]
                                    [--out docs/benchmarks/speed.md]

CTR-DNN `small`, batch 1,000, once with Adam and once with SGD (dense and tables alike, each
optimiser's default learning rate as `heterps run` picks it). Every case is a real command or
the loop in this process:

- the plain loop: `reference.train_plain` (one process, torch's own optimisers), 1 and 2
  threads;
- `heterps run` of a v1 plan: 1 stage bound `cpu:2`; 2 stages (embedding / dense) in every
  shape the defaults choose from (async and bsp, 1, 2 or 4 micro-batches); and the plan's
  defaults, the same 2-stage plan with no `--sync` / `--micro-batches` flag;
- `heterps train-dp --backend process`: 2 workers of 500 samples each (1,000 a step, as the
  loop) + the server process, with `--optimizer` where the command has it (else SGD only).
- production size: the async 2-stage shape at CTR-DNN `production` (26 x 60M rows, created
  on first use) with Adam, judged against the same shape at `small` in the same round, and
  the job's processes' peak resident memory summed (issue 24: at least 0.6x, under 6 GB).

Rounds are alternated (each round runs the cases in the reverse order of the one before) and
each figure is the best of `--rounds`: steady samples/s (the runtime's and the loop's from the
first finished mini-batch on; train-dp's over its wall clock after every worker joined). The
judged ratio is *paired*: the median over rounds of case / 2-thread loop of the same round, so
load that changes between rounds hits both sides. The machine's ceiling is the dense layers'
forward + backward alone on 2 threads. With py-spy installed (a dev dependency), one more run
of each of our cases with Adam is recorded (`py-spy record --idle --threads --subprocesses`)
and reduced to the top functions of every process. Writes the markdown report to `--out`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chain_plans import write_chain_plan  # noqa: E402
from heterps_core.cli.run_config import default_lr  # noqa: E402
from heterps_core.runtime.models import resolve_model  # noqa: E402
from heterps_core.runtime.reference import train_plain  # noqa: E402
from heterps_core.runtime.spec import TrainSettings  # noqa: E402

MODEL = "ctr_dnn"
BATCH = 1000
OPTIMIZERS = ("adam", "sgd")
BASELINE = "plain2"  # every ratio is against the plain loop on 2 threads
PROFILE_TOP = 4  # functions listed per thread
TEMPLATE = "template"
# From this line on the report is written by hand and kept across runs (write_report).
READING = "<!-- reading: written by hand, kept by bench/speed.py -->"


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    kind: str  # plain, run or dp
    stages: int = 0
    flags: tuple[str, ...] = ()
    threads: int = 1  # the plain loop's
    profiled: bool = False  # recorded with py-spy (once, Adam)
    size: str | None = None  # a model size of its own (default: the benchmark's `--size`)
    optimizers: tuple[str, ...] | None = None  # only these (default: every one measured)

    def runs_with(self, optimizer: str) -> bool:
        return self.optimizers is None or optimizer in self.optimizers


CASES = (
    Case("plain1", "plain loop, 1 thread", "plain", threads=1),
    Case("plain2", "plain loop, 2 threads", "plain", threads=2),
    Case("one", "1 stage, `cpu:2`", "run", 1, ("--bind", "cpu=cpu:2"), profiled=True),
    Case("async1", "2 stages, async, 1 micro-batch", "run", 2,
         ("--sync", "async", "--micro-batches", "1"), profiled=True),
    Case("async4", "2 stages, async, 4 micro-batches", "run", 2,
         ("--sync", "async", "--micro-batches", "4")),
    Case("bsp1", "2 stages, bsp, 1 micro-batch", "run", 2,
         ("--sync", "bsp", "--micro-batches", "1")),
    Case("bsp2", "2 stages, bsp, 2 micro-batches", "run", 2,
         ("--sync", "bsp", "--micro-batches", "2")),
    Case("bsp4", "2 stages, bsp, 4 micro-batches", "run", 2,
         ("--sync", "bsp", "--micro-batches", "4"), profiled=True),
    Case("defaults", "2 stages, the plan's defaults (no flags)", "run", 2, profiled=True),
    Case("dp", "`train-dp`, 2 workers + the server", "dp", profiled=True),
    # Issue 24's production goal: the same shape as async1 at production size (60M rows a
    # field, created on first use), sparse Adam, judged against async1 of the same round.
    Case("prod", "2 stages, async, 1 micro-batch, CTR-DNN `production`", "run", 2,
         ("--sync", "async", "--micro-batches", "1"), size="production",
         optimizers=("adam",)),
)
SHAPES = ("async1", "async4", "bsp1", "bsp2", "bsp4")  # what the defaults choose among
QUICK = ("plain1", "plain2", "one", "async1", "bsp4", "defaults", "dp", "prod")
JOB_MEMORY_GB = 6.0  # issue 24: the production job's processes together stay under this
QUICK_NOTE = ("**A smoke run (`--quick`: one round of 30 steps, fewer shapes)**: it shows that "
              "every case runs, not how fast; the goals are judged on a full run "
              "(`python bench/speed.py`) on a quiet machine.")


@dataclass(frozen=True)
class Goal:
    label: str
    case: str  # a case key, or "async" for the better async shape
    optimizer: str
    at_least: float
    against: str = "the plain loop on 2 threads"


GOALS = (
    Goal("2 stages, async", "async", "adam", 1.0),
    Goal("2 stages, async", "async", "sgd", 0.9),
    Goal("1 stage, `cpu:2`", "one", "adam", 1.0),
    Goal("1 stage, `cpu:2`", "one", "sgd", 0.9),
    Goal("the plan's defaults", "defaults", "adam", 0.9, "the best 2-stage shape"),
    Goal("the plan's defaults", "defaults", "sgd", 0.9, "the best 2-stage shape"),
    Goal("`train-dp`", "dp", "adam", 0.75),
    Goal("production size, 2 stages async, sparse Adam", "prod", "adam", 0.6,
         "the small model (2 stages, async, 1 micro-batch)"),
)


# --- the cases ---------------------------------------------------------------------------------


def write_plans(folder: Path, size: str) -> dict[int, Path]:
    """1-stage and 2-stage plans of the model's layer chain, one unit each."""
    return {stages: write_chain_plan(MODEL, size, stages, BATCH, folder / f"plan-{stages}.json")
            for stages in (1, 2)}


def dp_has_optimizer() -> bool:
    """Whether `heterps train-dp` takes `--optimizer` (issue 24 item 6)."""
    done = subprocess.run([sys.executable, "-m", "heterps_core", "train-dp", "--help"],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    return "--optimizer" in done.stdout


def command(case: Case, optimizer: str, size: str, steps: int, plans: dict[int, Path],
            dp_optimizer: bool) -> list[str]:
    """The command line of a `run` or `dp` case."""
    base = [sys.executable, "-m", "heterps_core"]
    if case.kind == "run":
        return [*base, "run", str(plans[case.stages]), "--model", MODEL, "--size", size,
                       "--steps", str(steps), "--batch-size", str(BATCH),
                       "--optimizer", optimizer, "--json", *case.flags]
    workers = 2
    # train-dp counts the local steps of all workers; evaluation is pushed past the run (the
    # server evaluates on its own thread of the 2 cores otherwise).
    line = [*base, "train-dp", MODEL, "--size", size, "--backend", "process",
                   "--workers", str(workers), "--batch-size", str(BATCH // workers),
                   "--steps", str(steps * workers), "--eval-every", "100000", "--json"]
    if dp_optimizer:
        line += ["--optimizer", optimizer, "--lr", str(default_lr(optimizer))]
    return line


def json_out(text: str) -> dict[str, object]:
    """The command's JSON summary (py-spy may print lines before it)."""
    data, _ = json.JSONDecoder().raw_decode(text[text.index("{"):])
    assert isinstance(data, dict)
    return data


def throughput(case: Case, summary: dict[str, object]) -> float:
    if case.kind == "run":
        return float(summary["throughput"])  # type: ignore[arg-type]
    workers = summary["workers"]
    assert isinstance(workers, list)
    samples = sum(w["steps"] * w["batch_size"] for w in workers)
    return samples / float(summary["time_s"])  # type: ignore[arg-type]


class CommandFailed(SystemExit):
    def __init__(self, text: str, returncode: int) -> None:
        super().__init__(text)
        self.returncode = returncode


def run_case(case: Case, optimizer: str, size: str, steps: int, plans: dict[int, Path],
             dp_optimizer: bool, env: dict[str, str], prefix: Sequence[str] = ()) -> tuple[
                 float, dict[str, object]]:
    """Steady samples/s of one case (and the command's summary; the loop's is empty)."""
    if case.kind == "plain":
        train = TrainSettings(model=MODEL, size=size, steps=steps, batch_size=BATCH,
                              lr=default_lr(optimizer), optimizer=optimizer)
        return train_plain(train, threads=case.threads).throughput, {}
    line = [*prefix, *command(case, optimizer, case.size or size, steps, plans, dp_optimizer)]
    done = subprocess.run(line, capture_output=True, text=True, cwd=ROOT, env=env, timeout=1800)
    if done.returncode != 0:
        raise CommandFailed(f"{' '.join(line)} failed ({done.returncode}):\n"
                            f"{done.stderr[-4000:]}", done.returncode)
    summary = json_out(done.stdout)
    return throughput(case, summary), summary


@dataclass
class Measured:
    """samples/s per (case, optimizer), one entry per round."""

    rates: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    # The largest over rounds of a `heterps run`'s processes' peak resident bytes, summed.
    job_bytes: dict[tuple[str, str], int] = field(default_factory=dict)

    def best(self, case: str, optimizer: str) -> float:
        return max(self.rates[(case, optimizer)])

    def paired(self, case: str, optimizer: str, against: str = BASELINE) -> float:
        """Median over rounds of case / `against`, both of the same round."""
        pairs = zip(self.rates[(case, optimizer)], self.rates[(against, optimizer)], strict=True)
        return statistics.median(a / b for a, b in pairs)

    def best_shape(self, optimizer: str) -> str | None:
        shapes = [k for k in SHAPES if self.has(k, optimizer)]
        return max(shapes, key=lambda k: self.best(k, optimizer)) if shapes else None

    def has(self, case: str, optimizer: str) -> bool:
        return bool(self.rates.get((case, optimizer)))


def measure(cases: Sequence[Case], optimizers: Sequence[str], size: str, steps: int,
            rounds: int, plans: dict[int, Path], dp_optimizer: bool, env: dict[str, str],
            log: Callable[[str], None]) -> Measured:
    """Every case `rounds` times, rounds alternated: odd rounds run the cases backwards."""
    measured = Measured()
    for r in range(rounds):
        order = [(c, o) for o in optimizers for c in cases]
        for case, optimizer in order if r % 2 == 0 else reversed(order):
            if ((case.kind == "dp" and optimizer != "sgd" and not dp_optimizer)
                    or not case.runs_with(optimizer)):
                continue
            rate, summary = run_case(case, optimizer, size, steps, plans, dp_optimizer, env)
            measured.rates[(case.key, optimizer)].append(rate)
            held = ""
            if case.kind == "run":
                key = (case.key, optimizer)
                measured.job_bytes[key] = max(job_bytes(summary), measured.job_bytes.get(key, 0))
                held = f", job {job_bytes(summary) / 1e9:.2f} GB"
            log(f"round {r + 1}: {optimizer} {case.key}: {rate:,.0f} samples/s "
                f"(load {os.getloadavg()[0]:.2f}{held}) {case.label}")
    return measured


_LOGGED = re.compile(r"^round (\d+): (\w+) (\w+): ([\d,]+) samples/s "
                     r"\(load ([\d.]+)(?:, job ([\d.]+) GB)?\)")
_LOGGED_OLD = re.compile(r"^round (\d+): (\w+) (.+): ([\d,]+) samples/s \(load ([\d.]+)\)$")
_CEILING = re.compile(r"^ceiling .*: ([\d,]+) samples/s")


def from_log(text: str) -> tuple[Measured, float | None, list[float]]:
    """The rates (and peaks), the ceiling and the loads a run's log printed: a report
    rendered again without measuring (`--from-log`, e.g. when its profile step failed).
    Lines name a case by its key, or (logs before 2026-12-03 19:00) by its label."""
    by_label = {c.label: c.key for c in CASES}
    m, top, loads = Measured(), None, []
    for line in text.splitlines():
        found = _LOGGED.match(line) or _LOGGED_OLD.match(line)
        if found:
            key = found.group(3) if found.re is _LOGGED else by_label[found.group(3)]
            m.rates[(key, found.group(2))].append(float(found.group(4).replace(",", "")))
            loads.append(float(found.group(5)))
            if found.re is _LOGGED and found.group(6):
                held = int(float(found.group(6)) * 1e9)
                m.job_bytes[(key, found.group(2))] = max(held, m.job_bytes.get(
                    (key, found.group(2)), 0))
        elif ceiling_line := _CEILING.match(line):
            top = float(ceiling_line.group(1).replace(",", ""))
    return m, top, loads


def job_bytes(summary: dict[str, object]) -> int:
    """A run's processes' peak resident bytes, summed (a shard served inside a stage's
    process is in that process's figure; the launcher, which trains nothing, is not)."""
    rows = summary.get("processes")
    assert isinstance(rows, list)
    return sum(int(p.get("peak_rss_bytes") or 0) for p in rows if not p.get("in_process"))


def ceiling(size: str, threads: int = 2, steps: int = 30) -> float:
    """The dense layers' forward + backward alone (no optimiser, no embeddings, no input),
    samples/s on `threads` threads: what this machine can do at most for the dense part."""
    torch.set_num_threads(threads)
    zoo = resolve_model(MODEL)
    config = zoo.config(size)
    model = zoo.build(config, seed=0)
    inputs, labels = next(zoo.batches(config, BATCH, seed=1))
    last = len(model.chain) - 1
    with torch.no_grad():
        boundary = model.run_layers(inputs, 0, 0)

    def step() -> None:
        x = boundary.detach().requires_grad_(True)
        model.loss(model.run_layers(x, 1, last), labels).backward()
        model.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * BATCH / (time.perf_counter() - start)


# --- py-spy ------------------------------------------------------------------------------------


def py_spy() -> str | None:
    """The py-spy next to this interpreter (the venv's), else on PATH, else None."""
    here = Path(sys.executable).with_name("py-spy")
    return str(here) if here.exists() else shutil.which("py-spy")


@dataclass(frozen=True)
class ThreadProfile:
    name: str  # Python's name of the thread (MainThread, Thread-2 (_run), ...)
    shares: list[tuple[str, float]]  # function -> share of the thread's samples (the top ones)
    samples: int = 0
    busy: int = 0  # samples not waiting (every function's, not only the top ones)


@dataclass(frozen=True)
class ProcessProfile:
    name: str
    threads: list[ThreadProfile]  # the busiest first

    def busiest(self) -> ThreadProfile:
        return self.threads[0]


_PROCESS = re.compile(r'^process (\d+):"(.*)"$')
_THREAD = re.compile(r"^thread \((?:0x)?[0-9a-fA-F]+\)(?:: (.*))?$")
_RANK = re.compile(r"--rank (\d+)")
_DP_WORKER = re.compile(r"dataparallel\.process\.worker \S+ (\d+)$")  # ADDRESS INDEX
_HEARTBEAT = re.compile(r"^heartbeat-(\d+)$")  # runtime/liveness.py names it by the rank
# Where a thread blocks: a sample whose innermost frame is one of these is waiting.
_WAITS = ("wait (", "select (", "poll (", "recv (", "_recv (", "accept (", "sleep (",
          "take_requests (", "take (runtime/wire.py)", "_run (runtime/liveness.py)")


def reduce_profile(raw: str, roles: dict[int, str], dp: bool = False) -> list[ProcessProfile]:
    """py-spy's raw output (`--idle --threads --subprocesses`) -> per process and thread
    the functions the thread's samples fell in, as shares of them. A sample counts for the
    deepest frame of the project (`heterps_core/...`), with the innermost frame beside it
    when that is elsewhere (torch, numpy, the standard library). The template process
    (it only forks the job processes) is left out. `roles`: rank -> role, from the
    command's summary; a job process is known by its heartbeat thread's name (py-spy can
    read a forked process's title before the process rewrote it). `dp`: the command was
    `train-dp` (its root is the server; py-spy may read the root's title as empty)."""
    counts: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    titles: dict[str, str] = {}
    depth: dict[str, int] = {}
    ranks: dict[str, int] = {}
    for line in raw.splitlines():
        stack, _, n = line.rstrip().rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = stack.split(";")
        procs = [(i, m) for i, m in ((i, _PROCESS.match(f)) for i, f in enumerate(frames)) if m]
        if not procs:
            continue
        last, match = procs[-1]
        pid = match.group(1)
        titles[pid], depth[pid] = match.group(2), len(procs)
        rest = frames[last + 1:]
        thread = _THREAD.match(rest[0]) if rest else None
        name = (thread.group(1) or "thread") if thread else "thread"
        if beat := _HEARTBEAT.match(name):
            ranks[pid] = int(beat.group(1))
        counts[pid][name][frame_label(rest[1:] if thread else rest)] += int(n)
    names = process_names(titles, depth, ranks, roles, dp)
    out = []
    for pid, threads in counts.items():
        if names[pid] == TEMPLATE:
            continue
        profiles = []
        for name, counter in threads.items():
            total = sum(counter.values())
            busy = sum(c for label, c in counter.items() if not waiting(label))
            profiles.append(ThreadProfile(name, [(label, c / total) for label, c
                                                 in counter.most_common(PROFILE_TOP)],
                                          total, busy))
        # By busy samples, not shares: a thread that lived a moment (a launcher's import
        # thread) is all work, yet did little of it.
        profiles.sort(key=lambda t: -t.busy)
        out.append(ProcessProfile(names[pid], profiles))
    return sorted(out, key=lambda p: p.name)


def working(thread: ThreadProfile) -> float:
    """The share of a thread's samples not spent waiting."""
    return thread.busy / thread.samples if thread.samples else 0.0


def waiting(label: str) -> bool:
    innermost = label.rpartition(" > ")[2]
    return innermost.startswith(_WAITS) or innermost == "(no Python frame)"


def frame_label(calls: list[str]) -> str:
    def short(frame: str) -> str:
        func, _, where = frame.partition(" (")
        path = where.rsplit(":", 1)[0]
        return f"{func} ({path})" if path else func

    ours = [c for c in calls if "(heterps_core/" in c]
    if not calls:
        return "(no Python frame)"
    if not ours:
        return short(calls[-1])
    mine = short(ours[-1]).replace("heterps_core/", "")
    return mine if ours[-1] == calls[-1] else f"{mine} > {short(calls[-1])}"


def process_names(titles: dict[str, str], depth: dict[str, int], ranks: dict[str, int],
                  roles: dict[int, str], dp: bool = False) -> dict[str, str]:
    """pid -> what the process is: the command (the root), a job rank's role (by its
    heartbeat thread, else its title), the template, a train-dp worker (by the index its
    command line ends with)."""
    names: dict[str, str] = {}
    for pid in sorted(titles, key=int):
        title = titles[pid]
        rank = ranks.get(pid)
        if rank is None and (found := _RANK.search(title)):
            rank = int(found.group(1))
        if depth[pid] == 1:
            names[pid] = ("`train-dp` server (the parameter server)" if dp
                          else "`heterps run` (the launcher)")
        elif rank is not None:
            names[pid] = f"{roles.get(rank, 'rank')} (rank {rank})"
        elif dp and (worker := _DP_WORKER.search(title)):
            names[pid] = f"`train-dp` worker {int(worker.group(1)) + 1}"
        elif "template_process" in title and depth[pid] == 2:
            names[pid] = TEMPLATE
        else:
            names[pid] = f"process {pid}"
    return names


@dataclass(frozen=True)
class Profiled:
    optimizer: str
    samples_per_s: float  # slowed by the sampling
    processes: list[ProcessProfile]


PROFILE_ATTEMPTS = 3


def profile_case(case: Case, optimizer: str, size: str, steps: int, plans: dict[int, Path],
                 dp_optimizer: bool, env: dict[str, str], spy: str, folder: Path,
                 rate: int = 100) -> Profiled:
    raw = folder / f"{case.key}-{optimizer}.txt"
    prefix = [spy, "record", "--idle", "--threads", "--subprocesses", "--nonblocking",
              "--rate", str(rate), "--format", "raw", "--output", str(raw), "--"]
    for attempt in range(PROFILE_ATTEMPTS):
        try:
            samples, summary = run_case(case, optimizer, size, steps, plans, dp_optimizer, env,
                                        prefix)
            break
        except CommandFailed as failed:
            # py-spy itself sometimes dies of SIGSEGV while following train-dp's processes
            # (an empty stderr, returncode -11); the command under it did not fail.
            if failed.returncode >= 0 or attempt == PROFILE_ATTEMPTS - 1:
                raise
        except ValueError:
            # The command's JSON never reached py-spy's stdout (seen once, 2026-12-03).
            if attempt == PROFILE_ATTEMPTS - 1:
                raise
    rows = summary.get("processes") or []
    assert isinstance(rows, list)
    roles = {int(p["rank"]): str(p["role"]) for p in rows}
    return Profiled(optimizer, samples,
                    reduce_profile(raw.read_text(), roles, dp=case.kind == "dp"))


# --- the report --------------------------------------------------------------------------------


def goal_ratio(goal: Goal, m: Measured) -> float | None:
    keys = ["async1", "async4"] if goal.case == "async" else [goal.case]
    keys = [k for k in keys if m.has(k, goal.optimizer)]
    if not keys:
        return None
    key = max(keys, key=lambda k: m.best(k, goal.optimizer))
    if goal.case == "prod":
        return m.paired(key, goal.optimizer, "async1") if m.has("async1", goal.optimizer) else None
    if goal.case != "defaults":
        return m.paired(key, goal.optimizer)
    shape = m.best_shape(goal.optimizer)
    return None if shape is None else m.paired(key, goal.optimizer, shape)


def render(m: Measured, cases: Sequence[Case], optimizers: Sequence[str],
           ceiling_rate: float, profiles: dict[str, Profiled] | None,
           profile_note: str, dp_optimizer: bool, info: dict[str, str]) -> str:
    lines = [
        "# Runtime speed: our runs against the plain loop (issue 24)",
        "",
        f"Measured {info['date']} with `{info['command']}` ({info['seconds']} s), "
        f"{os.cpu_count()} CPU cores, torch {torch.__version__}. Load average at start "
        f"{info['load_start']}, at end {info['load_end']} (the end's counts the benchmark's own "
        "processes)." + (" **Taken under load**: other work shared the cores; the ratios were "
                         "measured side by side, the absolute figures are low."
                         if float(info["load_start"].split()[0]) > 1.0 else ""),
        "",
        *([QUICK_NOTE, ""] if info.get("quick") else []),
        f"CTR-DNN `{info['size']}`, batch {BATCH:,}, {info['steps']} steps a run, best of "
        f"{info['rounds']} alternated rounds. *Paired* = median over rounds of the case's "
        "samples/s over the 2-thread plain loop's of the same round (the goals are judged on "
        "it); *best* = the best rounds' ratio. `heterps run` figures are its steady "
        "throughput (first to last finished mini-batch); train-dp's are samples over its "
        "wall clock from the moment every worker joined. How each case runs: "
        "`bench/speed.py`'s docstring.",
        "",
        f"Ceiling: the dense layers' forward + backward alone on 2 threads, "
        f"**{ceiling_rate:,.0f} samples/s** (no optimiser, embeddings or input).",
        "",
    ]
    for optimizer in optimizers:
        lines += [f"## {optimizer.capitalize()}", "",
                  "| case | best samples/s | paired vs 2-thread loop | best vs best |",
                  "|---|---:|---:|---:|"]
        base = m.best(BASELINE, optimizer)
        for case in cases:
            if not m.has(case.key, optimizer):
                continue
            best = m.best(case.key, optimizer)
            lines.append(f"| {case.label} | {best:,.0f} | "
                         f"{m.paired(case.key, optimizer):.2f} | {best / base:.2f} |")
        shape = m.best_shape(optimizer)
        if shape is not None and m.has("defaults", optimizer):
            lines += ["", f"Best 2-stage shape: {label_of(shape)}; the defaults ran at "
                      f"{m.paired('defaults', optimizer, shape):.2f}x of it (paired)."]
        lines.append("")
    if not dp_optimizer:
        lines += ["`heterps train-dp` has no `--optimizer` yet: it ran with SGD only.", ""]
    lines += ["## Goals (issue 24)", "",
              "| goal | optimiser | against | at least | measured | met |",
              "|---|---|---|---:|---:|---|"]
    unmet = []
    for goal in GOALS:
        ratio = goal_ratio(goal, m)
        met = ratio is not None and ratio >= goal.at_least
        shown = "not measured" if ratio is None else f"{ratio:.2f}"
        lines.append(f"| {goal.label} | {goal.optimizer} | {goal.against} | {goal.at_least} | "
                     f"{shown} | {'yes' if met else 'no'} |")
        if not met:
            unmet.append((goal, ratio))
    memory_left = None
    held = m.job_bytes.get(("prod", "adam"))
    if held is not None:
        under = held / 1e9 < JOB_MEMORY_GB
        lines.append(f"| production size: the job's processes' peak resident memory, summed | "
                     f"adam | - | under {JOB_MEMORY_GB:g} GB | {held / 1e9:.2f} GB | "
                     f"{'yes' if under else 'no'} |")
        if not under:
            memory_left = (f"- Production size: the job's processes held {held / 1e9:.2f} GB "
                           f"at their peaks, goal under {JOB_MEMORY_GB:g} GB.")
    elif m.has("prod", "adam"):
        lines.append(f"| production size: the job's processes' peak resident memory, summed | "
                     f"adam | - | under {JOB_MEMORY_GB:g} GB | not logged | - |")
        memory_left = ("- Production size: the job's memory was not logged by this run (logs "
                       "from 2026-12-03 19:00 on carry it).")
    lines += [
        "",
        "Correctness (sync mode equals the plain loop within 1e-5) is a test, not a figure: "
        "`tests/heterps_core/runtime/test_ps_optimizers.py`.",
        "",
        "## Where the time goes (py-spy)",
        "",
    ]
    if profiles is None:
        lines += [profile_note, ""]
    else:
        lines += [
            "One more run of each case under `py-spy record --idle --threads --subprocesses "
            "--rate 100` (sampling slows it: its samples/s is beside the name), from the "
            "command's start (the launcher's rows include its imports). Per process and "
            "thread (the most samples not waiting first, its samples and the share of them not "
            f"waiting beside it), the {PROFILE_TOP} functions most of the thread's "
            "samples fell in; a function is the deepest frame of `heterps_core`, `>` the "
            "innermost frame beside it. Waiting counts too (`--idle`): a `wait`, `select`, "
            "`recv` or `take (runtime/wire.py)` is a thread with nothing to do. The template "
            "process that forks the job processes is left out.",
            "",
            *([profile_note, ""] if profile_note.startswith("Not recorded for") else []),
        ]
        for key, run in profiles.items():
            lines += [f"### {label_of(key)}, {run.optimizer} ({run.samples_per_s:,.0f} "
                      "samples/s under py-spy)", ""]
            for proc in run.processes:
                lines.append(f"- **{proc.name}**")
                for thread in proc.threads:
                    shares = "; ".join(f"{label} {share:.0%}" for label, share in thread.shares)
                    lines.append(f"  - {thread.name} ({thread.samples:,} samples, "
                                 f"{working(thread):.0%} busy): {shares}")
            lines.append("")
    lines += ["## What is left", ""]
    if info.get("quick"):
        lines.append("- This is a smoke run: the full benchmark on a quiet machine judges the "
                     "goals.")
    elif not unmet and memory_left is None:
        lines.append("- Every goal measured here is met.")
    if memory_left is not None:
        lines.append(memory_left)
    for goal, ratio in unmet:
        if ratio is None:
            lines.append(f"- {goal.label} with {goal.optimizer}: not measured (goal "
                         f"{goal.at_least}x of {goal.against}).")
            continue
        lines.append(f"- {goal.label} with {goal.optimizer}: {ratio:.2f}x of {goal.against}, "
                     f"goal {goal.at_least}x." + hint(goal, profiles))
    lines.append("")
    return "\n".join(lines)


def hint(goal: Goal, profiles: dict[str, Profiled] | None) -> str:
    """The profile's busiest process of the goal's case, its top shares."""
    key = {"async": "async1"}.get(goal.case, goal.case)
    if not profiles or key not in profiles:
        return ""
    profile = profiles[key]
    # Only the job's own processes explain a gap (the launcher waits on them).
    procs = [p for p in profile.processes if "launcher" not in p.name] or profile.processes
    busiest = max(procs, key=lambda p: p.busiest().busy)
    top = ", ".join(f"{label} {share:.0%}" for label, share in busiest.busiest().shares[:3])
    return (f" Busiest thread (profiled with {profile.optimizer}): {busiest.name}, "
            f"{busiest.busiest().name}: {top}.")


def label_of(key: str) -> str:
    return next(c.label for c in CASES if c.key == key)


def load_text() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def render_logged(args: argparse.Namespace, log: Path) -> int:
    """`--from-log`: the report of a run that measured every round but did not write it."""
    m, top, loads = from_log(log.read_text())
    if not m.rates or top is None:
        raise SystemExit(f"--from-log: {log} holds no complete run (rates and the ceiling)")
    optimizers = [o for o in args.optimizers.split(",") if any(k[1] == o for k in m.rates)]
    cases = [c for c in CASES if any(k[0] == c.key for k in m.rates)]
    rounds = max(len(v) for v in m.rates.values())
    info = {
        "date": f"{dt.datetime.fromtimestamp(log.stat().st_mtime, dt.UTC):%Y-%m-%d %H:%M} UTC",
        "command": f"python bench/speed.py (rendered with --from-log {log.name})",
        "seconds": "-", "load_start": f"{loads[0]:.2f}", "load_end": f"{loads[-1]:.2f}",
        "size": args.size, "steps": str(args.steps), "rounds": str(rounds), "quick": "",
    }
    note = ("Not recorded: this report was rendered from the measuring run's log "
            "(`--from-log`), whose profile step failed.")
    text = render(m, cases, optimizers, top, None, note, dp_has_optimizer(), info)
    write_report(Path(args.out), text)
    print(text)
    return 0


def write_report(out: Path, text: str, marker: str = READING) -> None:
    """Write the report, keeping the hand-written reading (what would close each gap) that
    follows `marker` in the file it replaces: the figures change with every run, the
    reading only when someone has re-read them."""
    old = out.read_text() if out.exists() else ""
    kept = old[old.index(marker):] if marker in old else ""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + ("\n" + kept if kept else ""))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200, help="mini-batches per run")
    parser.add_argument("--size", default="small")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1 round of 30 steps, fewer shapes")
    parser.add_argument("--no-profile", action="store_true", help="skip the py-spy runs")
    parser.add_argument("--profile-steps", type=int,
                        help="mini-batches of each py-spy run (default: --steps); py-spy "
                        "finds a child process only once it has run a while")
    parser.add_argument("--cases", help="comma-separated case keys (default: all; "
                        f"{', '.join(c.key for c in CASES)})")
    parser.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "speed.md"))
    parser.add_argument("--from-log", metavar="FILE",
                        help="render the report from a run's log (its stderr) instead of "
                        "measuring; no profiles")
    args = parser.parse_args(argv)
    if args.from_log:
        return render_logged(args, Path(args.from_log))
    rounds, steps = (1, 30) if args.quick else (args.rounds, args.steps)
    keys = args.cases.split(",") if args.cases else QUICK if args.quick else [c.key for c in CASES]
    unknown = set(keys) - {c.key for c in CASES}
    if unknown or BASELINE not in keys:
        parser.error(f"--cases: unknown {sorted(unknown)}" if unknown
                     else f"--cases: the baseline {BASELINE} is needed")
    cases = [c for c in CASES if c.key in keys]
    optimizers = args.optimizers.split(",")
    started, load_start = time.perf_counter(), load_text()

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="heterps-speed-") as tmp:
        folder = Path(tmp)
        plans = write_plans(folder, args.size)
        dp_optimizer = dp_has_optimizer()
        m = measure(cases, optimizers, args.size, steps, rounds, plans, dp_optimizer, env, log)
        top = ceiling(args.size)
        log(f"ceiling (dense forward + backward, 2 threads): {top:,.0f} samples/s")
        spy = None if args.no_profile else py_spy()
        note = ("Skipped: `--no-profile`." if args.no_profile else
                "Skipped: py-spy is not installed (`.venv/bin/pip install -e '.[dev]'`).")
        profiles = None
        missing: list[str] = []
        if spy:
            profiles = {}
            for case in (c for c in cases if c.profiled):
                optimizer = optimizers[0] if case.kind != "dp" or dp_optimizer else "sgd"
                try:
                    profiles[case.key] = profile_case(case, optimizer, args.size,
                                                      args.profile_steps or steps, plans,
                                                      dp_optimizer, env, spy, folder)
                except (CommandFailed, ValueError) as failed:
                    # The rounds are measured: report them, and say which profile is missing.
                    log(f"profile of {case.label} failed: {str(failed)[:300]}")
                    missing.append(case.label)
                    continue
                log(f"profiled {case.label}")
            if missing:
                note = "Not recorded for: " + ", ".join(missing) + " (py-spy failed)."
    info = {
        "date": f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "command": ("python bench/speed.py " + " ".join(argv if argv is not None
                                                        else sys.argv[1:])).strip(),
        "seconds": f"{time.perf_counter() - started:.0f}",
        "load_start": load_start, "load_end": load_text(), "size": args.size,
        "steps": str(steps), "rounds": str(rounds), "quick": "yes" if args.quick else "",
    }
    text = render(m, cases, optimizers, top, profiles, note, dp_optimizer, info)
    write_report(Path(args.out), text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
