"""Entry point of one job process: `python -m heterps_core.runtime.worker --store H:P --rank R`.

It joins the job through the rendezvous store (torch.distributed TCPStore), reads the job
spec there, and runs its stage replica or parameter-server shard. A failure is written to
the store as `error/RANK` so the launcher can say what went wrong, then the process exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

from heterps_core import rendezvous as keys
from heterps_core.runtime import sync
from heterps_core.runtime.binding import Target, parse_target
from heterps_core.runtime.checkpoint import load_part
from heterps_core.runtime.liveness import Heartbeat
from heterps_core.runtime.metrics import Clock, Reporter
from heterps_core.runtime.models import resolve_model
from heterps_core.runtime.ps import ParameterServer
from heterps_core.runtime.sealing import PartReports
from heterps_core.runtime.spec import JobSpec, RankSpec
from heterps_core.runtime.stage import StageWorker
from heterps_core.zoo.tables import tables_on_meta

GLOO_TIMEOUT = timedelta(seconds=120)


def device_of(target: Target) -> str:
    if target.is_cuda:
        if not torch.cuda.is_available():
            raise RuntimeError(f"bound to {target} but this machine has no usable GPU")
        return f"cuda:{target.index}" if target.kind == "cuda" else "cuda:0"
    return "cpu"


def run_rank(
    store: dist.TCPStore, rank: int, device_override: str | None = None,
    heartbeat: Heartbeat | None = None,
) -> None:
    spec = JobSpec.from_json(store.get(keys.SPEC).decode())
    me = spec.ranks[rank]
    planned = parse_target(me.target)
    target = parse_target(device_override or me.target)
    if target.is_remote:
        target = Target("cuda") if target.remote_device == "cuda" else Target("cpu")
    if target.is_cuda != planned.is_cuda:
        # Peers pick the link device (NCCL or gloo) from the job's target; both must agree.
        want = "a GPU" if planned.is_cuda else "the CPU"
        raise RuntimeError(
            f"{me.describe()} must run on {want} (job target {me.target}), "
            f"the agent bound it to {target}"
        )
    # The count the compile step sized (runtime/threads.py), else the target's; the template
    # forked this process with one thread, so torch's pool is made here, at this size.
    torch.set_num_threads(me.threads or target.threads)
    device = device_of(target)
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group(
        spec.backend,
        store=keys.process_group_store(store),
        rank=rank,
        world_size=len(spec.processes),  # a shard served in a stage's process is no member
        timeout=GLOO_TIMEOUT,
    )
    try:
        # Every rank creates every group, in the same order (torch.distributed requires it).
        groups = [
            dist.new_group(spec.stage_ranks(s)) if stage.units > 1 else None
            for s, stage in enumerate(spec.stages)
        ]
        clock = Clock()
        stats: dict[str, int] = {}
        if me.role == "ps":
            stats = _serve(spec, me, PartReports(store, rank, spec.attempt), heartbeat)
        else:
            reporter = Reporter(store, rank, clock, spec.report_interval_s)
            stage = StageWorker(spec, me, device, groups[me.stage], reporter, clock, heartbeat)
            if heartbeat is not None:
                heartbeat.up()  # built and restored: start-up is over (liveness.py)
            stage.run()
        # ru_maxrss is in KiB on Linux: the process's peak resident set, torch included.
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        # threads: what the compile step sized this process to (runtime/threads.py), as applied.
        store.set(keys.stats(rank), json.dumps(
            {"peak_rss_bytes": peak, "threads": torch.get_num_threads(), **stats}))
    finally:
        dist.destroy_process_group()


def _serve(spec: JobSpec, me: RankSpec, parts: PartReports,
           heartbeat: Heartbeat | None) -> dict[str, int]:
    zoo = resolve_model(spec.train.model)
    with tables_on_meta():  # the server creates rows as they are touched
        model = zoo.build(zoo.config(spec.train.size), seed=spec.train.seed)
    server = ParameterServer(spec, me.replica, model, sync.get(spec.train.sync).ps_synchronous,
                             parts)
    if spec.start_step > 0:
        assert spec.checkpoint_dir is not None
        server.load(load_part(spec.checkpoint_dir, spec.start_step, me.rank))
    if heartbeat is not None:
        heartbeat.up()  # start-up is over (liveness.py)
    server.serve()
    return server.stats()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m heterps_core.runtime.worker")
    parser.add_argument("--store", required=True, help="rendezvous store HOST:PORT")
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--device", help="override the rank's target (agents pass their own)")
    args = parser.parse_args(argv)
    store = keys.connect(args.store)
    try:
        # First, before the model is built: the launcher's watchdog names a process whose
        # heartbeat stops (runtime/liveness.py), and the stages follow its drain step.
        heartbeat = Heartbeat(args.store, args.rank)
        run_rank(store, args.rank, args.device, heartbeat)
    except Exception as exc:
        traceback.print_exc()
        # The coordinator may already be gone; the exit code still tells.
        with contextlib.suppress(Exception):
            store.set(keys.error(args.rank), f"{type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Interpreter teardown with torch loaded takes seconds on a busy machine; nothing is
    # left to clean up (checkpoints are written atomically, the store has the metrics).
    os._exit(code)
