"""Load benchmark: many API clients and websocket viewers against the production shape.

    .venv/bin/python bench/load.py [--clients 100] [--viewers 100] [--seconds 60]
        [--think-s 1.0] [--server-processes 1] [--database heterps_h2]
        [--redis redis://127.0.0.1:6379/2] [--out FILE] [--append HEADING]

Starts, on free loopback ports, the server as production runs it (`manage.py up`: Daphne,
PostgreSQL through the psycopg pool, channels-redis) and one `celery -A workers worker`
on the interactive and long queues. The database is created afresh and the Redis database
flushed; both must be this benchmark's own.

After a warm-up (each endpoint ten times on fresh connections, not measured), for
`--seconds`, each of `--clients` threads loops over the API as a user would, with a
keep-alive connection and `--think-s` between requests: the project list (50 projects),
the work list of a project, a work record, and every tenth round submits an `evaluate`
(the worker runs it, its progress goes out on the channel layer). `--viewers` websocket
clients watch ten work records that this process advances every second (as a running job
does). A probe reads /healthz every 2 s (it must stay 200 with websockets open), and
pg_stat_activity is sampled every second, per application (PGAPPNAME).

Writes docs/benchmarks/load.md: errors, p50/p95/max latency per endpoint, websocket
events and their delay, /healthz answers, database connections (peak per application),
server threads before, at peak and after the load, and the machine's load average.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import http.client
import json
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs/benchmarks/load.md"
TINY = json.loads((ROOT / "webapp/catalogue/demo/tiny-ctr.json").read_text())
P95_BAR_S = 1.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def configure(database: str, redis_url: str) -> dict[str, str]:
    import psycopg
    import redis

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres",
                         autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')
    redis.Redis.from_url(redis_url).flushdb()
    env = {
        "DATABASE_URL": f"postgresql://postgres@127.0.0.1:5432/{database}",
        "REDIS_URL": redis_url,
        "HETERPS_SECURE": "0",
        "HETERPS_DB_POOL": "1",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "LOG_LEVEL": "WARNING",
        "HETERPS_VAR_DIR": os.environ.get("HETERPS_VAR_DIR", "/tmp/heterps-load"),
    }
    os.environ.update(env | {"PGAPPNAME": "heterps-bench"})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return env


def seed(users: int = 10, projects: int = 50) -> dict[str, Any]:
    """`users` users, each a member of `projects` projects; ten work records to watch."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils import timezone

    from webapp.accounts.services import create_token
    from webapp.background.models import Status, Work
    from webapp.projects.models import Membership, Project, Role

    people = [get_user_model().objects.create_user(f"load{i}") for i in range(users)]
    rows = Project.objects.bulk_create(Project(name=f"Load {i:02d}") for i in range(projects))
    Membership.objects.bulk_create(
        Membership(project=p, user=u, role=Role.OWNER if u == people[0] else Role.MEMBER)
        for p in rows for u in people)
    # Running under a lease of this benchmark that stays live (no sweeper touches them).
    lease = {"lease_owner": "load-bench:0:watched", "heartbeat_at": timezone.now() +
             dt.timedelta(days=1)}
    watched = [Work.objects.create(project=rows[i], kind="evaluate", status=Status.RUNNING,
                                   params={}, queue="interactive", created_by=people[0],
                                   **lease)
               for i in range(10)]
    client = Client()
    client.force_login(people[0])
    # Personal tokens, as users make them on their token page (DRF's legacy keys cost a
    # second lookup per request).
    return {"tokens": [create_token(u, "load benchmark")[1] for u in people],
            "projects": [p.pk for p in rows], "watched": [w.pk for w in watched],
            "cookie": f"sessionid={client.cookies['sessionid'].value}"}


def start(command: list[str], env: dict[str, str], app: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, cwd=ROOT, env=os.environ | env | {"PGAPPNAME": app},
                            stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def wait_http(port: int, path: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", path)
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"nothing answered 200 on :{port}{path} within {timeout_s} s")


def warm_up(port: int, token: str, projects: list[int]) -> None:
    """Each endpoint a few times on fresh connections before the clock starts: with
    several server processes each new connection lands on one of them, and a process's
    first requests import the API's code (seconds on a busy machine). Not measured: the
    benchmark is about the steady state, not the first request after a deploy."""
    headers = {"Authorization": f"Token {token}"}
    for _ in range(10):
        for path in ("/api/projects/", f"/api/work/?project={projects[0]}", "/healthz"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", path, headers=headers)
            conn.getresponse().read()
            conn.close()


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.samples: list[str] = []

    def add(self, name: str, seconds: float, ok: bool, detail: str = "") -> None:
        with self.lock:
            self.times[name].append(seconds)
            if not ok:
                self.errors[name] += 1
                if len(self.samples) < 10:
                    self.samples.append(f"{name}: {detail}"[:200])


def api_client(port: int, token: str, projects: list[int], deadline: float, think_s: float,
               stats: Stats, seed: int) -> None:
    rng = random.Random(seed)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"project": projects[0], "kind": "evaluate",
                       "params": {"instance": TINY}})
    round_ = 0
    last_work = None
    time.sleep(rng.uniform(0, think_s))  # do not start in lock step
    while time.monotonic() < deadline:
        round_ += 1
        calls = [("GET /api/projects/", "GET", "/api/projects/", None),
                 ("GET /api/work/?project=", "GET",
                  f"/api/work/?project={rng.choice(projects)}", None)]
        if last_work:
            calls.append(("GET /api/work/<id>/", "GET", f"/api/work/{last_work}/", None))
        if round_ % 10 == 1:
            calls.append(("POST /api/work/ (evaluate)", "POST", "/api/work/", body))
        for name, method, path, data in calls:
            if time.monotonic() >= deadline:
                return
            start = time.perf_counter()
            try:
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                payload = response.read()
                ok = response.status < 400
                detail = f"{response.status} {payload[:120]!r}"
                if ok and method == "POST":
                    last_work = json.loads(payload)["id"]
            except (OSError, http.client.HTTPException) as exc:
                ok, detail = False, f"{type(exc).__name__}: {exc}"
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            stats.add(name, time.perf_counter() - start, ok, detail)
            time.sleep(think_s)


async def viewers(port: int, cookie: str, watched: list[int], count: int,
                  deadline: float) -> dict[str, Any]:
    import websockets

    headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
    handshakes = asyncio.Semaphore(10)
    result: dict[str, Any] = {"connected": 0, "errors": 0, "events": 0, "delays": [],
                              "samples": []}

    async def viewer(i: int) -> None:
        url = f"ws://127.0.0.1:{port}/ws/work/{watched[i % len(watched)]}/"
        try:
            async with handshakes:
                ws = await websockets.connect(url, additional_headers=headers, max_size=None,
                                              open_timeout=30)
                await asyncio.wait_for(ws.recv(), 30)
            result["connected"] += 1
            async with ws:
                while time.monotonic() < deadline:
                    try:
                        raw = await asyncio.wait_for(ws.recv(), max(0.1, deadline -
                                                                     time.monotonic()))
                    except TimeoutError:
                        break
                    work = json.loads(raw)["work"]
                    result["events"] += 1
                    produced = work["metrics"].get("produced_at")
                    if produced:
                        result["delays"].append(time.time() - produced)
        except Exception as exc:  # a refused or dropped viewer is what we count
            result["errors"] += 1
            if len(result["samples"]) < 5:
                result["samples"].append(f"{type(exc).__name__}: {exc}"[:200])

    await asyncio.gather(*(viewer(i) for i in range(count)))
    return result


def publisher(watched: list[int], deadline: float, stop: threading.Event) -> None:
    """Advance the watched records once a second, as running work does."""
    from django.db import connection

    from heterps_core.progress import Progress
    from webapp.background import services

    step = 0
    while time.monotonic() < deadline and not stop.is_set():
        step += 1
        for work_id in watched:
            services.report_progress(work_id, Progress(step, 10_000, f"step {step}",
                                                       {"produced_at": time.time()}))
        stop.wait(1.0)
    connection.close()


def monitor(database: str, server_pid: int, stop: threading.Event, out: dict[str, Any],
            port: int) -> None:
    import psycopg

    peak: dict[str, int] = defaultdict(int)
    totals: list[int] = []
    threads: list[int] = []
    health: dict[int, int] = defaultdict(int)
    last_probe = 0.0
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres",
                         autocommit=True) as conn:
        while not stop.is_set():
            rows = conn.execute(
                "SELECT coalesce(application_name, ''), count(*) FROM pg_stat_activity "
                "WHERE datname = %s GROUP BY 1", (database,)).fetchall()
            for app, n in rows:
                peak[app] = max(peak[app], n)
            totals.append(sum(n for _, n in rows))
            threads.append(_threads(server_pid))
            if time.monotonic() - last_probe >= 2:
                last_probe = time.monotonic()
                health[_healthz(port)] += 1
            stop.wait(1.0)
    out.update(peak=dict(peak), total_peak=max(totals, default=0), cpu=_cpu_s(server_pid),
               total_mean=statistics.mean(totals) if totals else 0,
               threads_peak=max(threads, default=0), healthz=dict(health))


def _tree(pid: int) -> list[int]:
    """`pid` and its children (the server's other Daphne processes, `--processes`)."""
    found = [pid]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                found.append(int(entry.name))
    return found


def _cpu_s(pid: int, tree: bool = True) -> float:
    """CPU seconds (user + system) the process (and its children) used so far."""
    total = 0.0
    for each in _tree(pid) if tree else [pid]:
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def _threads(pid: int) -> int:
    total = 0
    for each in _tree(pid):
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("Threads:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def _healthz(port: int) -> int:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        return conn.getresponse().status
    except OSError:
        return 0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))] if values else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--viewers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--think-s", type=float, default=1.0)
    parser.add_argument("--database", default="heterps_h2")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/2")
    parser.add_argument("--server-processes", type=int, default=1,
                        help="`manage.py up --processes`: Daphne processes on the port")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--append", metavar="HEADING", default="",
                        help="append to --out as a section with this heading, instead of "
                             "replacing it (e.g. the saturation run next to the main one)")
    args = parser.parse_args()
    assert 1 <= args.clients <= 500 and 0 <= args.viewers <= 500 and args.seconds <= 600

    env = configure(args.database, args.redis)
    data = seed()
    port = free_port()
    logs = Path(env["HETERPS_VAR_DIR"])
    logs.mkdir(parents=True, exist_ok=True)
    server = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-demo",
                    "--processes", str(args.server_processes)],
                   env, "heterps-web", logs / "load-server.log")
    worker = start([sys.executable, "-m", "celery", "-A", "workers", "worker", "--queues",
                    "interactive,long", "--concurrency", "1", "--without-gossip",
                    "--without-mingle", "--loglevel", "WARNING"], env | {"HETERPS_DB_POOL": "0"},
                   "heterps-worker", logs / "load-worker.log")
    try:
        wait_http(port, "/healthz", 120)
        warm_up(port, data["tokens"][0], data["projects"])
        uptime_before = Path("/proc/loadavg").read_text().split()[:3]
        threads_before = _threads(server.pid)
        cpu_before, wall_before = _cpu_s(server.pid), time.monotonic()
        client_cpu_before = _cpu_s(os.getpid(), tree=False)
        stats = Stats()
        stop = threading.Event()
        watch: dict[str, Any] = {}
        deadline = time.monotonic() + args.seconds
        monitor_thread = threading.Thread(
            target=monitor, args=(args.database, server.pid, stop, watch, port), daemon=True)
        monitor_thread.start()
        threading.Thread(target=publisher, args=(data["watched"], deadline, stop),
                         daemon=True).start()
        clients = [threading.Thread(
            target=api_client, args=(port, data["tokens"][i % len(data["tokens"])],
                                     data["projects"], deadline, args.think_s, stats, i),
            daemon=True) for i in range(args.clients)]
        for client in clients:
            client.start()
        ws = asyncio.run(viewers(port, data["cookie"], data["watched"], args.viewers,
                                 deadline)) if args.viewers else {}
        for client in clients:
            client.join(60)
        time.sleep(10)  # idle: threads and connections should fall back
        stop.set()
        monitor_thread.join(10)
        wall = time.monotonic() - 10 - wall_before
        watch["cpu_s"] = watch["cpu"] - cpu_before
        watch["cpu_share"] = watch["cpu_s"] / wall
        watch["client_cpu_share"] = (_cpu_s(os.getpid(), tree=False) - client_cpu_before) / wall
        threads_after = _threads(server.pid)
        uptime_after = Path("/proc/loadavg").read_text().split()[:3]
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres") as conn:
            idle_after = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                                      (args.database,)).fetchone()[0]
    finally:
        for proc in (server, worker):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
        from django.db import connections

        connections.close_all()
    report = write(args, stats, ws, watch, threads_before, threads_after, idle_after,
                   uptime_before, uptime_after)
    print(report)


def write(args: Any, stats: Stats, ws: dict[str, Any], watch: dict[str, Any],
          threads_before: int, threads_after: int, idle_after: int,
          uptime_before: list[str], uptime_after: list[str]) -> str:
    everything = [t for times in stats.times.values() for t in times]
    errors = sum(stats.errors.values())
    p95 = percentile(everything, 0.95)
    title = f"## {args.append}" if args.append else (
        "# Load: API clients and websocket viewers on PostgreSQL + Redis")
    sub = "###" if args.append else "##"
    requests = len(everything)
    cpu_ms = 1000 * watch.get("cpu_s", 0) / requests if requests else 0
    lines = [
        title,
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC by `bench/load.py "
        f"--clients {args.clients} --viewers {args.viewers} --seconds {args.seconds:g} "
        f"--think-s {args.think_s:g} --server-processes {args.server_processes}` on "
        f"{platform.node()} ({os.cpu_count()} cores, shared "
        f"with other work: load average {' '.join(uptime_before)} before, "
        f"{' '.join(uptime_after)} after).",
        "",
        "Production shape on loopback: `manage.py up` (Daphne, psycopg pool, channels-redis), "
        "one `celery -A workers worker` (interactive + long, concurrency 1), PostgreSQL "
        "127.0.0.1:5432 (max_connections 100), Redis 127.0.0.1:6379. The server: "
        f"{args.server_processes} Daphne process(es) on one port (each runs Python on one "
        "core at a time, sync views in a thread per request, its own database pool). "
        f"Each API client is a thread with a keep-alive connection and "
        f"{args.think_s:g} s between requests; ten users with personal API tokens, each a "
        "member of 50 projects (so the project list has 50 rows).",
        "",
        f"**{requests} API requests ({requests / args.seconds:.1f}/s), {errors} errors, p50 "
        f"{percentile(everything, 0.5) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms** "
        f"(goal: 0 errors, p95 < {P95_BAR_S * 1000:.0f} ms: "
        f"{'met' if errors == 0 and p95 < P95_BAR_S else 'NOT met'}).",
        "",
        "| endpoint | requests | errors | p50 ms | p95 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in sorted(stats.times):
        times = stats.times[name]
        lines.append(f"| `{name}` | {len(times)} | {stats.errors[name]} | "
                     f"{percentile(times, 0.5) * 1000:.0f} | {percentile(times, 0.95) * 1000:.0f}"
                     f" | {max(times) * 1000:.0f} |")
    if stats.samples:
        lines += ["", "First errors:", ""] + [f"- `{s}`" for s in stats.samples]
    if ws:
        delays = ws["delays"]
        lines += [
            "", f"{sub} Websocket viewers", "",
            f"{args.viewers} viewers on 10 work records advanced once a second: "
            f"{ws['connected']} connected, {ws['errors']} errors, {ws['events']} events "
            f"received; delay from report to viewer p50 {percentile(delays, 0.5) * 1000:.0f} "
            f"ms, p95 {percentile(delays, 0.95) * 1000:.0f} ms.",
        ]
        lines += [f"- `{s}`" for s in ws["samples"]]
    health = watch.get("healthz", {})
    lines += [
        "", f"{sub} Health and resources", "",
        f"- `/healthz` every 2 s during the run: {dict(sorted(health.items()))} "
        "(status: count; it must stay 200 while websockets are open).",
        f"- Database connections (pg_stat_activity of this database, sampled every second): "
        f"peak {watch.get('total_peak', 0)} in all, mean {watch.get('total_mean', 0):.1f}; "
        f"peak per application {dict(sorted(watch.get('peak', {}).items()))}; "
        f"{idle_after} left 10 s after the load (a pool closes idle connections after "
        "minutes, not seconds). Each web server process's pool is bounded at 20 "
        "(HETERPS_DB_POOL_MAX); requests beyond it wait.",
        f"- Server threads (all processes): {threads_before} before, peak "
        f"{watch.get('threads_peak', 0)}, "
        f"{threads_after} 10 s after the load.",
        f"- Server CPU during the load: {watch.get('cpu_share', 0):.2f} cores on average "
        f"({args.server_processes} process(es), each at most one core), "
        f"{cpu_ms:.1f} ms per API request (the websocket events' share included); this "
        f"benchmark's own clients: {watch.get('client_cpu_share', 0):.2f} cores.",
        "",
    ]
    text = "\n".join(lines)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.append:
        args.out.write_text(args.out.read_text().rstrip("\n") + "\n\n" + text)
    else:
        args.out.write_text(text)
    return text


if __name__ == "__main__":
    main()
