"""Which runtime mode the environment selects, as pure functions of an env mapping.

Settings call these with `os.environ`; tests call them with plain dicts, so both modes are
tested without re-importing settings.

- embedded (no variables): SQLite under var/, in-memory channel layer, Celery on an
  in-memory broker with a worker thread inside the server process;
- production (`DATABASE_URL` and/or `REDIS_URL`): PostgreSQL through psycopg 3, channels-redis,
  Celery on Redis with separate `celery -A workers worker` processes.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dj_database_url

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})
REDIS_SOCKET_TIMEOUT_S = 30.0
DB_POOL_MAX = 20  # connections one web server process holds at most
DB_POOL_TIMEOUT_S = 30.0  # a request waits this long for a free one, then fails (500)


class SettingsError(ValueError):
    """An environment variable has a value we cannot use; names the variable."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name


@dataclass(frozen=True)
class Mode:
    """What the environment selected, in words the server logs at start-up."""

    database: str  # "sqlite" or "postgresql"
    channels: str  # "in-memory" or "redis"
    broker: str  # "in-memory" or "redis"

    @property
    def embedded_worker(self) -> bool:
        # With an in-memory broker only a worker in the same process can see the queue.
        return self.broker == "in-memory"

    @property
    def name(self) -> str:
        if self.database == "sqlite" and self.broker == "in-memory":
            return "embedded"
        if self.database == "postgresql" and self.broker == "redis":
            return "production"
        return "mixed"

    def describe(self) -> str:
        worker = (
            "Celery worker inside this process"
            if self.embedded_worker
            else "Celery workers started with `celery -A workers worker`"
        )
        return (
            f"HeterPS {self.name} mode: database {self.database}, "
            f"channel layer {self.channels}, broker {self.broker} ({worker})"
        )


def flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise SettingsError(name, f"must be 1/0, true/false, yes/no or on/off, got {raw!r}")


def mode(env: Mapping[str, str]) -> Mode:
    database = "postgresql" if env.get("DATABASE_URL") else "sqlite"
    redis = "redis" if env.get("REDIS_URL") else "in-memory"
    return Mode(database=database, channels=redis, broker=redis)


def databases(env: Mapping[str, str], var_dir: Path) -> dict[str, Any]:
    url = env.get("DATABASE_URL")
    if not url:
        return {
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": str(var_dir / "heterps.sqlite3"),
                # The in-process worker thread writes while requests read: WAL lets readers
                # go on during a write, IMMEDIATE transactions wait (timeout) instead of
                # failing on a lock upgrade.
                "OPTIONS": {
                    "timeout": 20,
                    "transaction_mode": "IMMEDIATE",
                    "init_command": "PRAGMA journal_mode=WAL;",
                },
                # Tests use a file too: a shared-cache in-memory database reports table
                # locks at once ("database table is locked") instead of waiting.
                "TEST": {"NAME": str(var_dir / "test_heterps.sqlite3")},
            }
        }
    if not url.startswith(("postgres://", "postgresql://")):
        raise SettingsError("DATABASE_URL", "must be a postgresql:// URL")
    # No persistent connections: under ASGI every request runs in a thread of its own, and
    # a connection kept per thread leaked until PostgreSQL ran out (issue 12). The web
    # server borrows from a bounded psycopg pool instead (requests beyond it wait up to
    # `timeout`); Celery workers (HETERPS_DB_POOL=0, set by workers.app) connect per task,
    # since a pool must not cross their fork. Sizing: docs/operations.md.
    config = dj_database_url.parse(url, conn_max_age=0)
    config["ENGINE"] = "django.db.backends.postgresql"  # psycopg 3 is the installed driver
    if flag(env, "HETERPS_DB_POOL", default=True):
        size = _positive_int(env, "HETERPS_DB_POOL_MAX", DB_POOL_MAX)
        config.setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1, "max_size": size, "timeout": DB_POOL_TIMEOUT_S,
        }
    return {"default": config}


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None:
        return default
    if not raw.strip().isdigit() or not 1 <= int(raw) <= 1000:
        raise SettingsError(name, f"must be a whole number from 1 to 1000, got {raw!r}")
    return int(raw)


def channel_layers(env: Mapping[str, str]) -> dict[str, Any]:
    url = env.get("REDIS_URL")
    if not url:
        return {"default": {"BACKEND": "webapp.background.layers.ThreadSafeInMemoryChannelLayer"}}
    # redis-py 8 gives sockets a 5 s read timeout, the same as the 5 s blocking pop that
    # channels-redis waits on: every idle receive would end in TimeoutError. Leave room.
    host = {"address": url, "socket_timeout": REDIS_SOCKET_TIMEOUT_S}
    return {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [host], "prefix": "heterps"},
        }
    }


# The longest task we accept runs 12 hours (a long training run). A message a worker
# took but never acknowledged (its main process died) is delivered again after this long;
# it must exceed the longest task, or a healthy running task is delivered a second time
# (the lease then turns that delivery away). Records do not wait for it: the sweeper
# fails or requeues a dead worker's work once its lease expires (WORK_LEASE_S).
VISIBILITY_TIMEOUT_S = 12 * 3600


def celery_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """Celery options, as Django settings with the CELERY_ prefix (see docs/operations.md)."""
    url = env.get("REDIS_URL")
    common: dict[str, Any] = {
        "CELERY_TASK_SERIALIZER": "json",
        "CELERY_ACCEPT_CONTENT": ["json"],
        # A task is acknowledged when it ends; a pool child killed mid-task puts its message
        # back at once (reject on worker lost), for the next child to recover the record.
        "CELERY_TASK_ACKS_LATE": True,
        "CELERY_TASK_REJECT_ON_WORKER_LOST": True,
        "CELERY_WORKER_PREFETCH_MULTIPLIER": 1,
        "CELERY_TASK_DEFAULT_QUEUE": "long",
        # Reconnect after a broker restart, at start-up and later, without giving up.
        "CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP": True,
        "CELERY_BROKER_CONNECTION_RETRY": True,
        "CELERY_BROKER_CONNECTION_MAX_RETRIES": None,
        # Tasks keep running while the broker is away; their lease guards against doubles.
        "CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS": False,
        # Submitting with the broker down fails within seconds (an HTTP 503), not minutes.
        "CELERY_TASK_PUBLISH_RETRY_POLICY": {
            "max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1.0,
        },
    }
    if not url:
        return common | {
            "CELERY_BROKER_URL": "memory://localhost/",
            "CELERY_RESULT_BACKEND": "cache+memory://",
        }
    return common | {
        "CELERY_BROKER_URL": url,
        "CELERY_RESULT_BACKEND": url,
        "CELERY_BROKER_TRANSPORT_OPTIONS": {
            "visibility_timeout": VISIBILITY_TIMEOUT_S,
            "socket_connect_timeout": 5,
            "socket_keepalive": True,
            "health_check_interval": 30,
            "retry_on_timeout": True,
        },
        "CELERY_RESULT_BACKEND_ALWAYS_RETRY": True,
        "CELERY_RESULT_BACKEND_MAX_RETRIES": 10,
        "CELERY_REDIS_BACKEND_HEALTH_CHECK_INTERVAL": 30,
        "CELERY_REDIS_SOCKET_CONNECT_TIMEOUT": 5,
    }


def work_timing(env: Mapping[str, str]) -> dict[str, float]:
    """Lease and sweep intervals of background work (seconds); tests shorten them.

    A running record's lease is refreshed every WORK_HEARTBEAT_S (and by each progress
    report); one not refreshed for WORK_LEASE_S belongs to a dead worker. The sweeper looks
    every WORK_SWEEP_S; a queued record it cannot find in the broker for WORK_REQUEUE_S is
    sent again."""
    names = {"WORK_LEASE_S": 60.0, "WORK_HEARTBEAT_S": 10.0, "WORK_SWEEP_S": 30.0,
             "WORK_REQUEUE_S": 120.0}
    timing = {}
    for name, default in names.items():
        raw = env.get(f"HETERPS_{name}")
        try:
            value = float(raw) if raw is not None else default
        except ValueError:
            raise SettingsError(
                f"HETERPS_{name}", f"must be a number of seconds, got {raw!r}") from None
        if not 0 < value <= 86400:
            raise SettingsError(f"HETERPS_{name}", f"must be in (0, 86400] seconds, got {raw}")
        timing[name] = value
    if timing["WORK_HEARTBEAT_S"] * 2 > timing["WORK_LEASE_S"]:
        raise SettingsError("HETERPS_WORK_HEARTBEAT_S", "must be at most half of the lease")
    return timing


def secret_key(env: Mapping[str, str], var_dir: Path) -> str:
    """`SECRET_KEY`, or a random key kept under var/ so local sessions survive restarts."""
    key = env.get("SECRET_KEY")
    if key:
        return key
    path = var_dir / "secret_key"
    if path.exists():
        return path.read_text().strip()
    var_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key + "\n")
    path.chmod(0o600)
    return key


def allowed_hosts(env: Mapping[str, str]) -> list[str]:
    raw = env.get("ALLOWED_HOSTS", "")
    hosts = [h.strip() for h in raw.split(",") if h.strip()]
    return hosts or ["127.0.0.1", "localhost", "[::1]"]
