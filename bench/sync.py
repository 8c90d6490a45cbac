"""Benchmark the sync modes against each other on the same jobs -> docs/benchmarks/sync.md.

For every model, the workers are profiled once and that profile is shared by every mode and
seed, so all runs see the same emulated cluster (1x/1x/2x/4x workers by default). Every run
trains for the same emulated duration; the target loss is set afterwards from the curves
(see `target_loss`) so that every mode can be timed to the same loss.

    .venv/bin/python bench/sync.py                 # the documented run, writes the doc
    .venv/bin/python bench/sync.py --quick --out -  # a smoke run, prints the table

With `--backend process` every worker is a real OS process and time is the wall clock (see
docs/sync-modes.md, "Backends"); its tables go into their own section of the doc, between
PROCESS_START and PROCESS_END, and a later emulated run keeps that section.

    .venv/bin/python bench/sync.py --backend process --models ctr_dnn --seeds 1 \
        --slowdowns 1,2,4 --duration 20
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heterps_core import zoo  # noqa: E402
from heterps_core.dataparallel import TrainConfig, TrainResult, modes, profile, train  # noqa: E402

DRAWN_FRACTION = 0.8  # a target is 80% of the way from the initial loss to a reachable loss
CLAIM_MODES = ("adsp", "ashl")  # the pair the paper's claim compares
PROCESS_START = "<!-- bench/sync.py --backend process: start -->"
PROCESS_END = "<!-- bench/sync.py --backend process: end -->"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="ctr_dnn,deepfm")
    parser.add_argument("--modes", default=",".join(modes.names()))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--slowdowns", default="1,1,2,4")
    parser.add_argument("--duration", type=float, default=8.0, help="emulated seconds per run")
    parser.add_argument("--batch-size", type=int, default=128, help="per worker")
    parser.add_argument("--vocab", type=int, default=1000, help="rows per embedding table")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--bandwidth-gbps", type=float, default=1.0)
    parser.add_argument("--backend", default="emulated", choices=("emulated", "process"),
                        help="emulated clock in one process, or real worker processes")
    parser.add_argument("--quick", action="store_true", help="1 seed, 2 s: a smoke run")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "sync.md"),
                        help="markdown file, or - for stdout")
    parser.add_argument("--raw", default=None, help="also write every run's result as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.duration = 1, 2.0
    return args


def model_config(name: str, vocab: int) -> Any:
    model = zoo.get(name)
    small = model.config("small")
    return model, dataclasses.replace(small, vocab_sizes=(vocab,) * len(small.vocab_sizes))


def evals_per_run(args: argparse.Namespace) -> int:
    # With real workers the server evaluates in its message loop: fewer evaluations keep it
    # from delaying pushes and pulls (the emulated clock does not advance while it evaluates).
    return 60 if args.backend == "emulated" else 20


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    slowdowns = tuple(float(s) for s in args.slowdowns.split(","))
    runs: dict[str, Any] = {}
    for name in args.models.split(","):
        model, config = model_config(name, args.vocab)
        base = TrainConfig(
            workers=len(slowdowns), slowdowns=slowdowns, batch_size=args.batch_size, lr=args.lr,
            duration_s=args.duration, eval_every_s=args.duration / evals_per_run(args),
            eval_samples=4096,
            bandwidth_gbps=args.bandwidth_gbps, backend=args.backend,
        )
        shared = profile(model, config, base)
        params = sum(p.numel() for p in model.build(config).parameters())
        results: dict[str, list[TrainResult]] = {}
        for mode in args.modes.split(","):
            results[mode] = []
            for seed in range(args.seeds):
                cfg = dataclasses.replace(base, seed=seed)
                result = train(model, config, modes.create(mode), cfg, profile=shared)
                results[mode].append(result)
                print(f"{name} {mode} seed {seed}: loss {result.evals[0].loss:.4f} -> "
                      f"{result.final.loss:.4f}, wall {result.wall_s:.1f} s", file=sys.stderr)
        runs[name] = {"profile": shared, "results": results, "params": params}
    return runs


def target_loss(results: dict[str, list[TrainResult]], among: tuple[str, ...] = ()) -> float:
    """A loss all modes in `among` (default: all) reach: 80% of the drop from the start to
    the worst of their best losses.

    Per mode the best held-out loss is taken as the median over seeds; the worst of those is
    the lowest loss all those modes are known to reach.
    """
    start = statistics.median(r.evals[0].loss for rs in results.values() for r in rs)
    chosen = [rs for mode, rs in results.items() if not among or mode in among]
    reachable = max(statistics.median(min(e.loss for e in r.evals) for r in rs) for rs in chosen)
    return start - DRAWN_FRACTION * (start - reachable)


def median_or_none(values: list[float | None]) -> float | None:
    """Median where a run that never got there counts as infinitely slow."""
    finite = sorted(v if v is not None else float("inf") for v in values)
    middle = statistics.median(finite)
    return None if middle == float("inf") else middle


def mode_row(results: list[TrainResult], common: float, claim: float) -> dict[str, Any]:
    reach = [r.time_to_loss(claim) for r in results]
    aucs = [r.final.auc for r in results if r.final.auc is not None]
    return {
        "time_to_common_s": median_or_none([r.time_to_loss(common) for r in results]),
        "time_to_target_s": median_or_none(reach),
        "reached": sum(t is not None for t in reach),
        "final_loss": statistics.median(r.final.loss for r in results),
        "final_auc": statistics.median(aucs) if aucs else None,
        "mb_sent_per_worker": statistics.median(r.bytes_sent / len(r.workers) / 1e6
                                                for r in results),
        "mb_received_per_worker": statistics.median(
            sum(w.bytes_received for w in r.workers) / len(r.workers) / 1e6 for r in results),
        "steps": statistics.median(r.global_steps for r in results),
        "wait_fraction": statistics.median(
            sum(w.wait_s for w in r.workers) / (len(r.workers) * r.time_s) for r in results),
        "switch_s": median_or_none([r.switch.time_s if r.switch else None for r in results]),
        "wall_s": sum(r.wall_s for r in results),
    }


def fmt(value: float | None, spec: str, missing: str = "not reached") -> str:
    return missing if value is None else format(value, spec)


def render(args: argparse.Namespace, runs: dict[str, Any], wall_s: float, argv: list[str]) -> str:
    emulated = args.backend == "emulated"
    h = "##" if emulated else "###"  # the process tables are one section of the emulated doc
    clock = "emulated" if emulated else "wall-clock"
    lines = [
        "# Sync modes on emulated heterogeneous workers" if emulated else
        "## Process backend: real worker processes, wall-clock time",
        "",
        "Written by `bench/sync.py`; numbers are measured, medians over seeds. See "
        "docs/sync-modes.md for the modes and for what emulated time means." if emulated else
        "Written by `bench/sync.py --backend process`: one OS process per worker, this process "
        "as parameter server, times are this machine's wall clock from the moment all workers "
        "have joined; slowdowns are injected as sleeps of (slowdown - 1) x each step's measured "
        "compute. Start-up (spawning the workers) is not counted in the times.",
        "",
        f"{h} Conditions",
        "",
        f"- command: `.venv/bin/python bench/sync.py {' '.join(argv)}`".rstrip() + "",
        f"- run on {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.machine()} with {os.cpu_count()} cores shared with other work "
        f"(load average at the end {os.getloadavg()[0]:.1f}); "
        f"total wall time {wall_s / 60:.1f} min",
        f"- {len(args.slowdowns.split(','))} workers, {'emulated' if emulated else 'injected'} "
        f"slowdowns {args.slowdowns}; "
        f"batch {args.batch_size} per worker; SGD lr {args.lr}; "
        + (f"link {args.bandwidth_gbps} Gbit/s" if emulated else
           "links: loopback sockets between processes, all-reduce over gloo (the configured "
           "link is not used); the workers and the server share this machine's 2 cores"),
        f"- every run: {args.duration} {clock} seconds, held-out set of 4096 samples evaluated "
        f"every {args.duration / evals_per_run(args):.3f} s; seeds 0..{args.seeds - 1}",
        f"- models: the zoo's `small` configs with {args.vocab} rows per embedding table "
        "(the architecture of the paper's CTR-DNN, tables cut so the run fits the machine)",
        "- every mode with its default parameters (`heterps train-dp --list-modes`)",
        "- time to a target: the first evaluation at or below the target loss. A target is "
        f"{DRAWN_FRACTION:.0%} of the way from the initial held-out loss to the highest of some "
        "modes' best losses (medians over seeds): the *common* target over all modes (every "
        "mode reaches it), the *claim* target over ADSP and ASHL only (deeper, the loss the "
        "claim compares them at; slower modes may miss it). A seed that never reached a target "
        "counts as infinitely slow in the median; `reached` counts seeds at the claim target",
        "- bytes: sent = pushes (top-k: 8 bytes per entry; uncompressed: dense or "
        "index/value pairs, whichever is smaller; all-reduce: ring); received = pulls of the "
        "entries changed since the worker's last pull",
        "",
    ]
    for name, run in runs.items():
        results = run["results"]
        common = target_loss(results)
        pair = tuple(m for m in CLAIM_MODES if m in results)
        target = target_loss(results, pair) if len(pair) == 2 else common
        rows = {mode: mode_row(rs, common, target) for mode, rs in results.items()}
        prof = run["profile"]
        lines += [
            f"{h} {name} ({run['params']:,} parameters)",
            "",
            ("Profile (shared by all runs)" if emulated else
             "Profile (measured once in this process, shared by all runs as the workers' "
             "starting step-time estimates; after that the workers' measured steps count)")
            + f": one step at batch {prof[0].batch_size} takes "
            f"{prof[0].compute_s * 1000:.1f} ms on a 1x worker (measured, trimmed mean; "
            f"per-worker measurements {', '.join(f'{p.measured_s * 1000:.1f}' for p in prof)} ms "
            f"pooled by median); a dense push or pull {prof[0].comm_s * 1000:.1f} ms. "
            f"Held-out loss targets: common {common:.4f}, claim {target:.4f}.",
            "",
            "| mode | to common target (s) | to claim target (s) | vs ADSP | reached | "
            "final loss | final AUC | MB sent / worker | MB received / worker | steps | "
            "waiting | AHL->SHL at (s) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        adsp = rows.get("adsp", {}).get("time_to_target_s")
        for mode, row in rows.items():
            t = row["time_to_target_s"]
            versus = "" if t is None or not adsp else f"{(t - adsp) / adsp:+.0%}"
            lines.append(
                f"| {mode} | {fmt(row['time_to_common_s'], '.2f')} | {fmt(t, '.2f')} | "
                f"{versus} | {row['reached']}/{args.seeds} | "
                f"{row['final_loss']:.4f} | {fmt(row['final_auc'], '.4f', '-')} | "
                f"{row['mb_sent_per_worker']:.1f} | {row['mb_received_per_worker']:.1f} | "
                f"{row['steps']:.0f} | "
                f"{row['wait_fraction']:.0%} | {fmt(row['switch_s'], '.2f', '-')} |"
            )
        lines += ["", claim(rows), ""]
        run["rows"], run["target"] = rows, target
    return "\n".join(lines)


def claim(rows: dict[str, dict[str, Any]]) -> str:
    if "ashl" not in rows or "adsp" not in rows:
        return ""
    ashl, adsp = rows["ashl"], rows["adsp"]
    if ashl["time_to_target_s"] is None or adsp["time_to_target_s"] is None:
        return "Claim (ASHL >= 35% faster than ADSP): not testable, a mode missed the target."
    saving = 1 - ashl["time_to_target_s"] / adsp["time_to_target_s"]
    auc = (ashl["final_auc"] or 0) - (adsp["final_auc"] or 0)
    verdict = "holds" if saving >= 0.35 and auc >= -0.002 else "does not hold"
    return (f"Claim (ASHL needs >= 35% less time than ADSP to the same loss, AUC no worse), "
            f"at the claim target: "
            f"measured {saving:+.0%} time saved, AUC difference {auc:+.4f}: **{verdict}** here.")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    start = time.perf_counter()
    runs = run_all(args)
    text = render(args, runs, time.perf_counter() - start, argv)
    if args.raw:
        raw = {name: {mode: [r.to_dict() for r in rs] for mode, rs in run["results"].items()}
               for name, run in runs.items()}
        Path(args.raw).write_text(json.dumps(raw, default=str))
    if args.out == "-":
        print(text)
    elif args.backend == "process":
        Path(args.out).write_text(with_process_section(Path(args.out), text))
    else:
        existing = Path(args.out).read_text() if Path(args.out).exists() else ""
        marker = "\n## Discussion"
        tail = existing[existing.index(marker):] if marker in existing else ""
        Path(args.out).write_text(text + tail)
    return 0


def with_process_section(path: Path, text: str) -> str:
    """The doc with its process-backend section replaced by `text` (appended if missing)."""
    existing = path.read_text() if path.exists() else ""
    block = f"{PROCESS_START}\n{text}\n{PROCESS_END}\n"
    if PROCESS_START in existing and PROCESS_END in existing:
        head, rest = existing.split(PROCESS_START, 1)
        return head + block + rest.split(PROCESS_END, 1)[1].lstrip("\n")
    return existing.rstrip("\n") + "\n\n" + block


if __name__ == "__main__":
    raise SystemExit(main())
