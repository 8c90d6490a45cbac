"""In-process cost of the API requests bench/load.py makes: queries and CPU per request.

    .venv/bin/python bench/api_cost.py [--database heterps_h1_cost] [--repeat 30]

Seeds a fresh PostgreSQL database as bench/load.py does (ten users with personal tokens,
each in 50 projects of ten members; 100 finished evaluate records in the first project),
then sends each request through Django's test client (no HTTP server, the psycopg pool as
the server has it) and prints, per request, the queries it ran and the CPU (process time)
and wall time it took, averaged over `--repeat`. It separates what Django and DRF cost from
what the server (Daphne, threads) and the machine's other load add in bench/load.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="heterps_h1_cost")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/1")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    import load  # bench/load.py: the same database set-up and seed

    load.configure(args.database, args.redis)
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["testserver"]
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from webapp.background.models import Status, Work
    from webapp.projects.models import Project

    data = load.seed()
    owner = get_user_model().objects.get(username="load0")
    first = Project.objects.get(pk=data["projects"][0])
    Work.objects.bulk_create(
        Work(project=first, kind="evaluate", status=Status.SUCCEEDED,
             params={"instance": load.TINY}, result={"plans": [], "best": 0},
             queue="interactive", created_by=owner) for _ in range(100))
    client = Client(HTTP_AUTHORIZATION=f"Token {data['tokens'][0]}")
    paths = {
        "GET /api/projects/ (50 rows x 10 members)": "/api/projects/",
        "GET /api/work/?project= (50 of 101 rows)": f"/api/work/?project={first.pk}",
        "GET /api/work/?project= (empty)": f"/api/work/?project={data['projects'][5]}",
        "GET /api/work/<id>/": f"/api/work/{data['watched'][0]}/",
    }
    print(f"| request | queries | CPU ms | wall ms |  (load average "
          f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])})")
    print("|---|---:|---:|---:|")
    for name, path in paths.items():
        client.get(path)  # warm: imports, the pool's first connection
        queries: list[Any] = []

        def count(execute: Any, sql: str, params: Any, many: bool, context: Any,
                  queries: list[Any] = queries) -> Any:
            queries.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            assert client.get(path).status_code == 200
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(args.repeat):
            client.get(path)
        cpu_ms = (time.process_time() - cpu) / args.repeat * 1000
        wall_ms = (time.perf_counter() - wall) / args.repeat * 1000
        print(f"| `{name}` | {len(queries)} | {cpu_ms:.1f} | {wall_ms:.1f} |")
    connection.close()


if __name__ == "__main__":
    main()
