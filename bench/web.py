"""Web benchmark: page server time with 1,000 plans and 100 jobs in PostgreSQL, and the
delay from a runtime sample to websocket viewers on the Redis channel layer.

    .venv/bin/python bench/web.py [--out docs/benchmarks/web.md] [--requests 40]
        [--viewers 100] [--database heterps_bench] [--redis redis://127.0.0.1:6379/5]

It creates (and drops at the end) its own PostgreSQL database, seeds it through the real
services (1,000 planning results in 100 requests, 100 jobs with 40 metric samples each, 10
of them running), times every list page and the dashboard with Django's test client (the
server's own time: no network, no browser), counts their queries, then serves the ASGI app
with daphne and runs a real runtime job (tiny CTR-DNN, two stages + a parameter server)
whose samples 1 and then N websocket clients receive. The delay is the client's receive
time minus the moment the runtime handed the sample to the web layer (`produced_at`).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGE_BAR_MS = 150.0
DAPHNE_LOG = Path(os.environ.get("TMPDIR", "/tmp")) / "heterps-bench-daphne.log"
ONE_VIEWER_BAR_S = 0.5
MANY_VIEWERS_BAR_S = 1.0


def configure(database: str, redis_url: str) -> None:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres",
                         autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')
    os.environ.update({
        "DATABASE_URL": f"postgresql://postgres@127.0.0.1:5432/{database}",
        "REDIS_URL": redis_url,
        "HETERPS_SECURE": "0",
        "ALLOWED_HOSTS": "testserver,127.0.0.1,localhost",
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "LOG_LEVEL": "WARNING",
    })
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def drop(database: str) -> None:
    from django.db import connections

    connections.close_all()
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres",
                         autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def seed() -> dict[str, Any]:
    """1,000 plan results and 100 jobs (10 running), through the real services."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from webapp.background.models import Status, Work
    from webapp.jobs import samples, services
    from webapp.jobs.models import Job, JobMetric
    from webapp.modelzoo.models import RegisteredModel
    from webapp.planning.models import Cluster, PlanningRequest, PlanResult
    from webapp.projects.services import create_project

    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    project = create_project(user, "Bench")
    plan = samples.ctr_plan()
    instance = samples.ctr_instance().to_dict()
    model = RegisteredModel.objects.create(project=project, name="CTR tiny", zoo_name="ctr_dnn",
                                           size="tiny")
    cluster = Cluster.objects.create(project=project, name="two CPU kinds")
    for _ in range(100):
        request = PlanningRequest.objects.create(
            project=project, model=model, cluster=cluster, batch_size=64, throughput_target=100,
            instance=instance, schedulers=["exact", "greedy"], created_by=user)
        PlanResult.objects.bulk_create(
            PlanResult(project=project, request=request, scheduler=f"s{i}", plan=plan,
                       feasible=True, throughput=plan["throughput"],
                       cost_per_hour=plan["cost_per_hour"], solve_time_s=0.01 * i,
                       gap_to_exact=0.0, chosen=i == 0)
            for i in range(10))
    source = services.PlanSource(project=project, plan=plan, model_name="ctr_dnn",
                                 model_size="tiny", batch_size=64, scheduler="exact")
    now = timezone.now()
    for j in range(100):
        job = services.approve(user, source, services.RunOptions(steps=40), start=False)
        running = j < 10
        work = Work.objects.create(
            project=project, kind=services.RUN_KIND, params={"job": job.pk, "run": 1},
            status=Status.RUNNING if running else Status.SUCCEEDED, created_by=user,
            started_at=now, finished_at=None if running else now)
        JobMetric.objects.bulk_create(
            JobMetric(job=job, run=1, step=s, total_steps=40, elapsed_s=0.5 * s,
                      samples_per_s=120.0, loss=0.7 - 0.001 * s, cost=0.0001 * s,
                      stages=[{"stage": 1, "resource": "cpu", "units": 1, "busy_s": 0.2,
                               "idle_s": 0.3, "busy_fraction": 0.4}])
            for s in range(1, 41))
        Job.objects.filter(pk=job.pk).update(work=work, runs=1, accrued_cost=0.004,
                                             last_step=40, last_throughput=120.0)
    return {"user": user, "project": project, "source": source,
            "plans": PlanResult.objects.count(), "jobs": Job.objects.count(),
            "request": PlanningRequest.objects.order_by("-pk").first(),
            "job": Job.objects.order_by("-pk").first()}


def page_urls(data: dict[str, Any]) -> list[tuple[str, str]]:
    from django.urls import NoReverseMatch, reverse

    wanted = [
        ("dashboard", "dashboard:home", []),
        ("job list", "jobs:list", []),
        ("job list, page 2", "jobs:list", []),
        ("job page (40 samples)", "jobs:detail", [data["job"].pk]),
        ("cost report", "costs:report", []),
        ("planning index", "planning:index", []),
        ("planning, project page", "planning:project", [data["project"].pk]),
        ("planning request (10 results)", "planning:detail", [data["request"].pk]),
        ("project page", "projects:detail", [data["project"].pk]),
        ("API: jobs", "job-list", []),
        ("API: work", "work-list", []),
    ]
    urls = []
    for label, name, args in wanted:
        try:
            url = reverse(name, args=args)
        except NoReverseMatch:
            continue
        urls.append((label, url + ("?page=2" if "page 2" in label else "")))
    return urls


def time_pages(user: Any, urls: list[tuple[str, str]], requests: int) -> list[dict[str, Any]]:
    from django.db import connection
    from django.test import Client

    client = Client(raise_request_exception=False)  # a failing page is reported, not fatal
    client.force_login(user)
    rows = []
    for label, url in urls:
        for _ in range(3):
            client.get(url)
        queries: list[str] = []

        def count(execute: Any, sql: str, *rest: Any, seen: list[str] = queries) -> Any:
            seen.append(sql)
            return execute(sql, *rest)

        with connection.execute_wrapper(count):
            status = client.get(url).status_code
        times = []
        for _ in range(requests):
            start = time.perf_counter()
            client.get(url)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        rows.append({"label": label, "url": url, "status": status, "queries": len(queries),
                     "p50": statistics.median(times),
                     "p95": times[max(0, round(0.95 * len(times)) - 1)]})
        print(f"  {label:32s} p95 {rows[-1]['p95']:7.1f} ms, {len(queries)} queries", flush=True)
    return rows


def session_cookie(user: Any) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def serve(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
         "webapp.asgi:application"],
        cwd=ROOT, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=DAPHNE_LOG.open("w"))
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"daphne did not start: {DAPHNE_LOG.read_text()[-2000:]}")


async def watch(url: str, cookie: str, port: int, ready: asyncio.Event, viewers: int,
                samples: int) -> list[list[float]]:
    """`viewers` clients on one job; each returns its delays (s) for `samples` samples."""
    import websockets

    headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
    connected = 0
    # Ten handshakes at a time: a burst of 100 at once exhausts channels-redis' connection
    # pool on this server (MaxConnectionsError -> HTTP 500), see docs/benchmarks/web.md.
    handshakes = asyncio.Semaphore(10)

    async def viewer() -> list[float]:
        nonlocal connected
        delays: list[float] = []
        async with handshakes:
            ws = await websockets.connect(url, additional_headers=headers, max_size=None)
            await ws.recv()  # the current state
        async with ws:
            connected += 1
            if connected == viewers:
                ready.set()
            while len(delays) < samples:
                import json

                work = json.loads(await asyncio.wait_for(ws.recv(), 120))["work"]
                produced = work["metrics"].get("produced_at")
                if produced is not None:
                    delays.append(time.time() - produced)
                if work["finished"]:
                    break
        return delays

    return await asyncio.gather(*(viewer() for _ in range(viewers)))


def run_job_for_viewers(data: dict[str, Any], port: int, viewers: int,
                        samples: int) -> list[float]:
    """Start a real runtime job, let `viewers` websocket clients watch it, then cancel it."""
    from asgiref.sync import async_to_sync  # noqa: F401  (Django setup done)

    from webapp.background import services as work_services
    from webapp.jobs import services

    user = data["user"]
    job = services.approve(user, data["source"], services.RunOptions(steps=20000),
                           start=False)
    job = services.start_run(user, job)
    url = f"ws://127.0.0.1:{port}/ws/work/{job.work_id}/"
    cookie = session_cookie(user)
    result: list[list[float]] = []

    async def main() -> None:
        ready = asyncio.Event()
        task = asyncio.create_task(watch(url, cookie, port, ready, viewers, samples))
        await asyncio.wait_for(ready.wait(), 60)
        runner = threading.Thread(target=work_services.run_work, args=(job.work_id,),
                                  daemon=True)  # what the Celery worker does
        runner.start()
        result.extend(await task)
        await asyncio.to_thread(services.cancel, user, job)
        await asyncio.get_running_loop().run_in_executor(None, runner.join, 60)

    asyncio.run(main())
    return [d for per_viewer in result for d in per_viewer]


def replay_for_viewers(data: dict[str, Any], port: int, viewers: int,
                       samples: int) -> list[float]:
    """The same path without the runtime's processes: a thread hands synthetic samples to
    the job-run kind's sample handler every 0.5 s (store, commit, publish), as the
    launcher would. Separates the web layer's fan-out from the CPU the runtime takes."""
    from heterps_core.runtime import MetricsSample, StageMetrics
    from webapp.background.models import Status, Work
    from webapp.jobs import run_kind, services

    user = data["user"]
    job = services.approve(user, data["source"], services.RunOptions(steps=samples * 8),
                           start=False)
    job = services.start_run(user, job)
    Work.objects.filter(pk=job.work_id).update(status=Status.RUNNING)
    ids = run_kind._Ids(job=job.pk, project=job.project_id, work=job.work_id)
    url = f"ws://127.0.0.1:{port}/ws/jobs/work/{job.work_id}/"
    cookie = session_cookie(user)
    result: list[list[float]] = []

    def produce() -> None:
        stop = threading.Event()
        for i in range(1, samples + 2):
            sample = MetricsSample(
                step=8 * i, total_steps=8 * (samples + 1), elapsed_s=0.5 * i,
                samples_per_s=1000.0, loss=0.6, cost=0.0001 * i, cost_per_hour=2.0,
                stages=(StageMetrics(1, "cpu", 1, 0.3, 0.2), StageMetrics(2, "cpu-b", 1, 0.1, 0.4)))
            run_kind._on_sample(ids, 1, 0.0, sample,
                                lambda p: work_services.report_progress(ids.work, p), stop)
            time.sleep(0.5)

    from webapp.background import services as work_services

    async def main() -> None:
        ready = asyncio.Event()
        task = asyncio.create_task(watch(url, cookie, port, ready, viewers, samples))
        await asyncio.wait_for(ready.wait(), 60)
        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        result.extend(await task)
        await asyncio.get_running_loop().run_in_executor(None, producer.join, 60)

    asyncio.run(main())
    return [d for per_viewer in result for d in per_viewer]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(q * len(ordered)) - 1)]


def write(out: Path, pages: list[dict[str, Any]], ws: dict[int, list[float]],
          seeded: dict[str, Any],
          args: argparse.Namespace, command: str, replay: dict[int, list[float]]) -> None:
    lines = [
        "# Web benchmark",
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC with `{command}`.",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} when the report was written "
        "(everything, the runtime's processes included, runs on these cores), Python "
        f"{platform.python_version()}, PostgreSQL and Redis on localhost.",
        "",
        f"Data: {seeded['plans']} planning results (100 requests x 10 schedulers) and "
        f"{seeded['jobs']} jobs (10 running, 40 metric samples each) in PostgreSQL, one "
        "project, the user an owner.",
        "",
        f"## Pages: server time ({args.requests} requests each after 3 warm-ups)",
        "",
        "Django's test client in-process against PostgreSQL: the server's own time, no "
        "network, no browser rendering. Queries counted on one request.",
        "",
        f"| page | URL | p50 (ms) | p95 (ms) | queries | p95 < {PAGE_BAR_MS:g} ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in pages:
        served = r["status"] in (200, 302)  # the planning index redirects to the one project
        ok = "yes" if r["p95"] < PAGE_BAR_MS and served else f"**no** ({r['status']})"
        lines.append(f"| {r['label']} | `{r['url']}` | {r['p50']:.1f} | {r['p95']:.1f} | "
                     f"{r['queries']} | {ok} |")
    lines += [
        "",
        "## Live metrics: runtime sample -> websocket client",
        "",
        "A real runtime job (tiny CTR-DNN, 2 stages + 1 parameter-server process, all on this "
        "CPU) runs in a thread as the Celery worker would; every 0.5 s sample is stored "
        "(JobMetric row + work record), published after the commit on the **Redis** channel "
        "layer, and delivered by **daphne** (a separate process) to real websocket clients "
        "(the `websockets` package) over TCP. Delay = client receive time minus the time "
        "the runtime handed the sample to the web layer.",
        "",
        "| viewers | samples received | median (s) | p95 (s) | max (s) | bar | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for viewers, delays in ws.items():
        bar = ONE_VIEWER_BAR_S if viewers == 1 else MANY_VIEWERS_BAR_S
        p95 = percentile(delays, 0.95)
        lines.append(f"| {viewers} | {len(delays)} | {statistics.median(delays):.3f} | "
                     f"{p95:.3f} | {max(delays):.3f} | < {bar:g} s (p95) | "
                     f"{'yes' if p95 < bar else '**no**'} |")
    lines += [
        "",
        "The same fan-out without the runtime's processes competing for the two cores: a "
        "thread hands synthetic samples every 0.5 s to the job-run kind's own sample handler "
        "(store + commit + publish), as the launcher does:",
        "",
        "| viewers | samples received | median (s) | p95 (s) | max (s) |",
        "|---|---|---|---|---|",
    ]
    for viewers, delays in replay.items():
        lines.append(f"| {viewers} | {len(delays)} | {statistics.median(delays):.3f} | "
                     f"{percentile(delays, 0.95):.3f} | {max(delays):.3f} |")
    lines.append("")
    out.write_text("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs/benchmarks/web.md"))
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--viewers", type=int, default=100)
    parser.add_argument("--samples", type=int, default=20, help="samples each viewer waits for")
    parser.add_argument("--database", default="heterps_bench")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/5")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    command = "python bench/web.py " + " ".join(sys.argv[1:])
    configure(args.database, args.redis)
    daphne = None
    try:
        print("seeding ...", flush=True)
        seeded = seed()
        print("pages:", flush=True)
        pages = time_pages(seeded["user"], page_urls(seeded), args.requests)
        daphne = serve(args.port)
        ws: dict[int, list[float]] = {}
        for viewers in (1, args.viewers):
            delays = run_job_for_viewers(seeded, args.port, viewers, args.samples)
            ws[viewers] = delays
            print(f"  {viewers} viewers: p95 {percentile(delays, 0.95):.3f} s over "
                  f"{len(delays)} samples", flush=True)
        replay: dict[int, list[float]] = {}
        for viewers in (1, args.viewers):
            replay[viewers] = replay_for_viewers(seeded, args.port, viewers, args.samples)
            print(f"  replay, {viewers} viewers: p95 {percentile(replay[viewers], 0.95):.3f} s",
                  flush=True)
        write(Path(args.out), pages, ws, seeded, args, command.strip(), replay)
        print(f"wrote {args.out}")
    finally:
        if daphne is not None:
            daphne.terminate()
            daphne.wait(10)
        drop(args.database)
        import redis

        redis.Redis.from_url(args.redis).flushdb()
    return 0


if __name__ == "__main__":
    sys.exit(main())
