"""The rendezvous store (torch.distributed's TCPStore at the coordinator) and its key schema.

Every key the launcher, the worker processes and the agents share is built here, so the
protocol is written down once:

| key | written by | holds |
|---|---|---|
| `job/spec` | launcher | the `JobSpec` JSON |
| `metrics/RANK/SEQ`, `metrics/RANK/n` | worker | metric chunks, and how many were written |
| `error/RANK` | worker | its exception text |
| `stats/RANK` | worker | at its end: peak resident bytes (a server shard: rows held) |
| `exit/RANK` | agent | the exit code of a rank it ran |
| `beat/RANK` | worker | a counter its heartbeat thread advances (runtime/liveness.py) |
| `progress/RANK` | worker | a stage's newest started step, its answer to the drain offer |
| `where/RANK` | worker | `{"pid", "host"}` of the process, for error messages |
| `up/RANK` | worker | set once its start-up is over (it trains or serves) |
| `checkpoint/RANK/SEQ`, `.../n` | worker | a part it wrote (step, size, hash, attempt); count |
| `control/stop` | launcher | set once: every process stops |
| `control/drain` | launcher, agent | why the job must stop early (a SIGTERM: a spot notice) |
| `control/stop_at` | launcher | the drain step offered (runtime/stopping.py) |
| `control/stop_agreed` | launcher | the offer every stage promised: all checkpoint there, end |
| `agents/joined`, `agents/I` | agent | a counter; `{"name", "provides"}` of agent I |
| `agents/I/ranks` | launcher | the ranks agent I runs (JSON list) |
| `agents/I/beat`, `agents/I/done` | agent | its heartbeat counter; set once its ranks ended |
| `pg/...` | torch.distributed | the process group's own keys (`PREFIX_PG`) |
"""

from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist

from heterps_core.errors import InstanceError

STORE_TIMEOUT = timedelta(seconds=60)
PREFIX_PG = "pg"

SPEC = "job/spec"
STOP = "control/stop"
DRAIN = "control/drain"
STOP_AT = "control/stop_at"
STOP_AGREED = "control/stop_agreed"
AGENTS_JOINED = "agents/joined"


def metrics_chunk(rank: int, seq: int) -> str:
    return f"metrics/{rank}/{seq}"


def metrics_count(rank: int) -> str:
    return f"metrics/{rank}/n"


def error(rank: int) -> str:
    return f"error/{rank}"


def stats(rank: int) -> str:
    return f"stats/{rank}"


def exit_code(rank: int) -> str:
    return f"exit/{rank}"


def beat(rank: int) -> str:
    return f"beat/{rank}"


def progress(rank: int) -> str:
    return f"progress/{rank}"


def where(rank: int) -> str:
    return f"where/{rank}"


def up(rank: int) -> str:
    return f"up/{rank}"


def part_report(rank: int, seq: int) -> str:
    return f"checkpoint/{rank}/{seq}"


def part_reports(rank: int) -> str:
    return f"checkpoint/{rank}/n"


def agent_beat(index: int) -> str:
    return f"agents/{index}/beat"


def agent_done(index: int) -> str:
    return f"agents/{index}/done"


def agent(index: int) -> str:
    return f"agents/{index}"


def agent_ranks(index: int) -> str:
    return f"agents/{index}/ranks"


def parse_address(text: str, where: str = "coordinator") -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InstanceError(where, f"must be HOST:PORT, got {text!r}")
    return host, int(port)


def serve(host: str = "127.0.0.1", port: int = 0) -> dist.TCPStore:
    """The coordinator's store; port 0 picks a free port (read it back from `.port`)."""
    return dist.TCPStore(
        host,
        port,
        world_size=None,
        is_master=True,
        timeout=STORE_TIMEOUT,
        wait_for_workers=False,
        use_libuv=True,
    )


def connect(address: str, timeout: timedelta = STORE_TIMEOUT) -> dist.TCPStore:
    host, port = parse_address(address)
    return dist.TCPStore(host, port, is_master=False, timeout=timeout, use_libuv=True)


def process_group_store(store: dist.Store) -> dist.PrefixStore:
    """The part of the store torch.distributed's process group may use."""
    return dist.PrefixStore(PREFIX_PG, store)
