"""The environment chooses the mode: embedded default vs. PostgreSQL + Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from webapp import environment

REPO = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DATABASE_URL": "postgresql://heterps:pw@db.internal:5432/heterps",
    "REDIS_URL": "redis://cache.internal:6379/1",
}


def test_no_variables_select_the_embedded_default(tmp_path: Path) -> None:
    mode = environment.mode({})
    assert (mode.name, mode.database, mode.channels, mode.broker) == (
        "embedded", "sqlite", "in-memory", "in-memory")
    assert mode.embedded_worker
    db = environment.databases({}, tmp_path)["default"]
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert db["NAME"] == str(tmp_path / "heterps.sqlite3")
    layer = environment.channel_layers({})["default"]["BACKEND"]
    assert layer.endswith("InMemoryChannelLayer")
    celery = environment.celery_settings({})
    assert celery["CELERY_BROKER_URL"].startswith("memory://")


def test_database_and_redis_urls_select_production(tmp_path: Path) -> None:
    mode = environment.mode(PRODUCTION)
    assert mode.name == "production" and not mode.embedded_worker
    db = environment.databases(PRODUCTION, tmp_path)["default"]
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["HOST"], db["PORT"], db["NAME"], db["USER"]) == (
        "db.internal", 5432, "heterps", "heterps")
    layer = environment.channel_layers(PRODUCTION)["default"]
    assert layer["BACKEND"] == "channels_redis.core.RedisChannelLayer"
    assert layer["CONFIG"]["hosts"][0]["address"] == PRODUCTION["REDIS_URL"]
    celery = environment.celery_settings(PRODUCTION)
    assert celery["CELERY_BROKER_URL"] == PRODUCTION["REDIS_URL"]
    assert celery["CELERY_RESULT_BACKEND"] == PRODUCTION["REDIS_URL"]
    assert "workers" in mode.describe()


def test_the_web_server_borrows_from_a_bounded_pool_and_workers_connect_per_task(
    tmp_path: Path,
) -> None:
    db = environment.databases(PRODUCTION, tmp_path)["default"]
    assert db["CONN_MAX_AGE"] == 0  # no connection kept per ASGI thread
    assert db["OPTIONS"]["pool"] == {"min_size": 1, "max_size": environment.DB_POOL_MAX,
                                     "timeout": environment.DB_POOL_TIMEOUT_S}
    sized = environment.databases(PRODUCTION | {"HETERPS_DB_POOL_MAX": "4"}, tmp_path)
    assert sized["default"]["OPTIONS"]["pool"]["max_size"] == 4
    worker = environment.databases(PRODUCTION | {"HETERPS_DB_POOL": "0"}, tmp_path)["default"]
    assert "pool" not in worker.get("OPTIONS", {}) and worker["CONN_MAX_AGE"] == 0
    with pytest.raises(environment.SettingsError, match="HETERPS_DB_POOL_MAX"):
        environment.databases(PRODUCTION | {"HETERPS_DB_POOL_MAX": "lots"}, tmp_path)


def test_celery_recovers_from_lost_workers_and_broker_restarts() -> None:
    celery = environment.celery_settings(PRODUCTION)
    assert celery["CELERY_TASK_ACKS_LATE"] and celery["CELERY_TASK_REJECT_ON_WORKER_LOST"]
    assert celery["CELERY_BROKER_CONNECTION_RETRY"]
    assert celery["CELERY_BROKER_CONNECTION_MAX_RETRIES"] is None
    assert celery["CELERY_BROKER_TRANSPORT_OPTIONS"]["visibility_timeout"] == 12 * 3600
    assert celery["CELERY_RESULT_BACKEND_ALWAYS_RETRY"]


def test_lease_timing_comes_from_the_environment_and_is_checked() -> None:
    assert environment.work_timing({})["WORK_LEASE_S"] == 60.0
    assert environment.work_timing({"HETERPS_WORK_LEASE_S": "3",
                                    "HETERPS_WORK_HEARTBEAT_S": "0.5"})["WORK_LEASE_S"] == 3.0
    with pytest.raises(environment.SettingsError, match="HETERPS_WORK_SWEEP_S"):
        environment.work_timing({"HETERPS_WORK_SWEEP_S": "soon"})
    with pytest.raises(environment.SettingsError, match="half of the lease"):
        environment.work_timing({"HETERPS_WORK_LEASE_S": "10", "HETERPS_WORK_HEARTBEAT_S": "9"})


def test_a_database_url_that_is_not_postgres_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(environment.SettingsError, match="DATABASE_URL"):
        environment.databases({"DATABASE_URL": "mysql://x@y/z"}, tmp_path)


def test_flags_accept_common_words_and_name_a_bad_value() -> None:
    assert environment.flag({"DEBUG": "Yes"}, "DEBUG", default=False) is True
    assert environment.flag({"DEBUG": "0"}, "DEBUG", default=True) is False
    assert environment.flag({}, "DEBUG", default=True) is True
    with pytest.raises(environment.SettingsError, match="DEBUG"):
        environment.flag({"DEBUG": "maybe"}, "DEBUG", default=False)


def test_local_secret_key_is_random_and_kept(tmp_path: Path) -> None:
    first = environment.secret_key({}, tmp_path)
    assert len(first) >= 50
    assert environment.secret_key({}, tmp_path) == first
    assert environment.secret_key({}, tmp_path / "other") != first
    assert environment.secret_key({"SECRET_KEY": "from-env"}, tmp_path) == "from-env"


def test_allowed_hosts_default_to_local_names() -> None:
    assert "127.0.0.1" in environment.allowed_hosts({})
    assert environment.allowed_hosts({"ALLOWED_HOSTS": "a.example, b.example"}) == [
        "a.example", "b.example"]


def _django(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS",
                          "HETERPS_SECURE"}}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=clean | env,
        capture_output=True, text=True, timeout=120,
    )


SHOW = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.MODE.name, s.DATABASES['default']['ENGINE'], "
    "s.CHANNEL_LAYERS['default']['BACKEND'], s.CELERY_BROKER_URL, s.DEBUG]))"
)


@pytest.mark.slow
def test_settings_module_follows_the_environment(tmp_path: Path) -> None:
    base = {"DJANGO_SETTINGS_MODULE": "webapp.settings", "HETERPS_VAR_DIR": str(tmp_path)}
    embedded = _django(base, SHOW)
    assert embedded.returncode == 0, embedded.stderr
    name, engine, layer, broker, debug = json.loads(embedded.stdout)
    assert (name, engine, broker, debug) == (
        "embedded", "django.db.backends.sqlite3", "memory://localhost/", False)
    assert layer.endswith("ThreadSafeInMemoryChannelLayer")

    production = _django(base | PRODUCTION, SHOW)
    assert production.returncode == 0, production.stderr
    name, engine, layer, broker, _ = json.loads(production.stdout)
    assert (name, engine, broker) == (
        "production", "django.db.backends.postgresql", PRODUCTION["REDIS_URL"])
    assert layer == "channels_redis.core.RedisChannelLayer"


@pytest.mark.slow
def test_check_deploy_passes_with_production_variables(tmp_path: Path) -> None:
    env = PRODUCTION | {
        "SECRET_KEY": "k" * 20 + "Z9-x_" * 10,
        "ALLOWED_HOSTS": "heterps.example.com",
        "DEBUG": "0",
        "HETERPS_VAR_DIR": str(tmp_path),
    }
    result = _django(env, "from django.core.management import "
                     "execute_from_command_line as run; run(['manage.py', 'check', '--deploy'])")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "security.W" not in output and "ERRORS" not in output


@pytest.mark.slow
@pytest.mark.production
async def test_an_idle_redis_receiver_outlives_the_default_socket_timeout(redis_url: str) -> None:
    """Regression: with redis-py's 5 s socket timeout, channels-redis's 5 s blocking pop
    raised TimeoutError on every idle receive (a websocket viewer of a quiet job)."""
    import asyncio

    from channels_redis.core import RedisChannelLayer

    config = environment.channel_layers({"REDIS_URL": redis_url})["default"]["CONFIG"]
    layer = RedisChannelLayer(**config)
    channel = await layer.new_channel()

    async def send_later() -> None:
        await asyncio.sleep(6.5)
        await layer.send(channel, {"type": "late"})

    sender = asyncio.create_task(send_later())
    message = await asyncio.wait_for(layer.receive(channel), 20)
    await sender
    assert message == {"type": "late"}


@pytest.mark.production
def test_the_postgres_configuration_connects_through_psycopg_3(
    postgres_url: str, tmp_path: Path
) -> None:
    import psycopg

    db = environment.databases({"DATABASE_URL": postgres_url}, tmp_path)["default"]
    with psycopg.connect(
        host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"],
        password=db["PASSWORD"] or None, dbname=db["NAME"], connect_timeout=5,
    ) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()
    assert version is not None and int(version[0]) >= 130000
