"""Runtime memory benchmark: peak resident memory of every process of a pipelined job.

    .venv/bin/python bench/runtime_memory.py [--shards 2] [--out FILE]

CTR-DNN with 26 fields of 1e6 rows each (a 1.04 GB table), planned as an
embedding stage + a dense stage with one unit each and `--shards` parameter-server shards;
runs 10 mini-batches and samples every process's peak resident set size (VmHWM) while it
runs. Writes a markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import threading
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heterps_core.costmodel import evaluate  # noqa: E402
from heterps_core.instance import Instance  # noqa: E402
from heterps_core.plan import Plan  # noqa: E402
from heterps_core.runtime import RunConfig, TrainSettings  # noqa: E402
from heterps_core.runtime.launcher import Launcher  # noqa: E402
from heterps_core.zoo.base import ModelConfig  # noqa: E402
from heterps_core.zoo.ctr_dnn import N_SPARSE, CtrDnn  # noqa: E402

VOCAB = 1_000_000


class BigCtr(CtrDnn):
    """CTR-DNN with `VOCAB` rows per field (workers load this file by path)."""

    name = "big_ctr"

    def config(self, size: str = "small") -> ModelConfig:
        small = super().config("small")
        return ModelConfig(
            vocab_sizes=(VOCAB,) * N_SPARSE,
            embedding_dim=small.embedding_dim,
            hidden=small.hidden,
            extra=small.extra,
        )


def two_stage_plan(n_layers: int) -> Plan:
    names = ["cpu", "cpu-b"]
    instance = Instance.from_dict(
        {
            "version": 1,
            "batch_size": 1000,
            "throughput_target": 1.0,
            "resources": [
                {"name": n, "kind": "cpu", "price_per_hour": 0.5, "count": 2,
                 "memory_gb": 64, "network_gbps": 10}
                for n in names
            ],
            "layers": [
                {"name": f"l{i}", "kind": "embedding" if i == 0 else "dense",
                 "compute_s": {n: 0.01 for n in names}, "output_mb": 1.0, "sync_mb": 0.1,
                 "memory_gb": 0.1, "shardable": i == 0}
                for i in range(n_layers)
            ],
        }
    )
    return evaluate(instance, ["cpu"] + ["cpu-b"] * (n_layers - 1))


def peak_memory(shards: int) -> dict[str, float]:
    """Peak resident GB of every process of one 10-step job, by process description."""
    model = f"{Path(__file__).resolve()}:BigCtr"
    with torch.device("meta"):  # the layer count only: nothing allocated
        n_layers = len(BigCtr().build(BigCtr().config()).layers)
    train = TrainSettings(model=model, steps=10, batch_size=1000, lr=0.01, micro_batches=1)
    launcher = Launcher(RunConfig(plan=two_stage_plan(n_layers), train=train, ps_shards=shards))
    launcher.start()
    peak: dict[int, float] = {}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for rank, pid in launcher.pids.items():
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM"):
                            peak[rank] = int(line.split()[1]) * 1024 / 1e9
                except OSError:
                    pass
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        launcher.wait()
    finally:
        done.set()
        watcher.join()
    return {launcher.spec.ranks[rank].describe(): gb for rank, gb in sorted(peak.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "runtime-memory.md"))
    args = parser.parse_args()
    command = "python bench/runtime_memory.py " + " ".join(sys.argv[1:])
    table_gb = VOCAB * N_SPARSE * 10 * 4 / 1e9
    peaks = peak_memory(args.shards)
    lines = [
        "# Runtime memory benchmark",
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC with `{command.strip()}`.",
        "",
        f"CTR-DNN with {N_SPARSE} fields x {VOCAB:,} rows x 10 floats: one sparse table of "
        f"{table_gb:.2f} GB. Plan: embedding stage + dense stage, one unit each, "
        f"{args.shards} parameter-server shards, 10 mini-batches of 1000. Peak resident set "
        "(VmHWM) of each process, sampled every 50 ms; a bare worker process with torch "
        "loaded is about 0.3 GB.",
        "",
        "| process | peak resident GB |",
        "|---|---:|",
        *[f"| {name} | {gb:.2f} |" for name, gb in peaks.items()],
        f"| all | {sum(peaks.values()):.2f} |",
        "",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
