"""`manage.py up`: migrate, admin account once, demo data, then serve HTTP + websockets."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.accounts import throttle
from webapp.background import broker, leases, sweeper
from webapp.demo import demo_wanted
from webapp.ops.demo import admin_notice, load_demo
from webapp.ops.services import ensure_admin

# How long running work gets to stop after SIGTERM / Ctrl-C before the process exits.
SHUTDOWN_S = 8.0


class Command(BaseCommand):
    help = "Migrate, create the admin account once, load demo data and start the server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        demo = parser.add_mutually_exclusive_group()
        demo.add_argument("--demo", dest="demo", action="store_true", default=None,
                          help="load the demo data (once; the default only in embedded mode)")
        demo.add_argument("--no-demo", dest="demo", action="store_false",
                          help="skip the demo data")
        parser.add_argument(
            "--worker-threads", type=int, default=2,
            help="threads of the embedded Celery worker (embedded mode only)",
        )
        parser.add_argument(
            "--processes", type=int, default=int(os.environ.get("HETERPS_WEB_PROCESSES", 1)),
            help="Daphne processes sharing the port (channel layer on Redis only; one "
                 "process runs Python on one core; each holds its own database pool). "
                 "Default HETERPS_WEB_PROCESSES or 1",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(settings.MODE.describe())
        processes = options["processes"]
        if not 1 <= processes <= 64:
            raise CommandError("--processes must be from 1 to 64")
        try:
            throttle.trusted_proxies()  # a wrong HETERPS_TRUSTED_PROXY stops here, named
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        if processes > 1 and settings.MODE.channels != "redis":
            # An in-memory channel layer (and the embedded worker) live in one process:
            # a second one would not see its websockets' events.
            raise CommandError("--processes above 1 needs the Redis channel layer (REDIS_URL)")
        call_command("migrate", interactive=False, verbosity=0)
        # Hashed, compressed copies of static/ (webapp/staticstorage.py): seconds, and only
        # changed files are copied again.
        call_command("collectstatic", interactive=False, verbosity=0)
        admin, password = ensure_admin()
        if password:
            notice = admin_notice(admin.get_username(), password, self.stdout)
            self.stdout.write(self.style.WARNING(f"\n{notice}\n"))
        if demo_wanted(settings.MODE.name, os.environ, options["demo"]):
            for name, created in load_demo(admin).items():
                self.stdout.write(f"demo {name}: {created} new")
        # Records the last server (or a dead worker) left running or queued are settled
        # first; the sweeper then keeps looking while the server runs.
        swept = sweeper.sweep(startup=True)
        if swept:
            self.stdout.write("recovered work: " + ", ".join(f"{n} {what}"
                                                           for what, n in swept.items()))
        sweeper.start_periodic()
        worker = None
        if settings.MODE.embedded_worker:
            worker = broker.start_embedded_worker(options["worker_threads"])
        url = f"http://{options['host']}:{options['port']}/"
        self.stdout.write(self.style.SUCCESS(f"Serving HeterPS on {url} (Ctrl-C stops)"))
        try:
            self._serve(options["host"], options["port"], processes)
        finally:
            self._shut_down(worker)

    def _shut_down(self, worker: Any) -> None:
        """Stop within seconds: nothing new starts here (a queued record stays queued for
        the next start), running work is told to stop (its runtime processes end; the
        records say "interrupted"), then the worker threads are given SHUTDOWN_S. A task
        still running then would hold the interpreter's exit (Celery's thread pool is
        joined at exit): the process ends without it, its record settled by the next
        start-up sweep (its owner, this pid, is gone)."""
        sweeper.stop_periodic()
        stopped = leases.close_local()
        if stopped:
            self.stdout.write(f"stopping {stopped} running work item(s)")
        if worker is not None and worker.stop(timeout_s=SHUTDOWN_S):
            self.stdout.write("work did not stop in time; exiting without it")
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)

    def _serve(self, host: str, port: int, processes: int) -> None:
        from daphne.cli import CommandLineInterface

        # A websocket handshake waits for a database connection from the pool (the
        # permission check); under load that takes longer than Daphne's default 5 s.
        # No --proxy-headers: Daphne would take any client's X-Forwarded-For as its
        # address; webapp.accounts.throttle.client_address believes the header only from
        # HETERPS_TRUSTED_PROXY (issue 25 item 3).
        common = ["--websocket_connect_timeout", "30", "webapp.asgi:application"]
        if processes == 1:
            CommandLineInterface().run(["--bind", host, "--port", str(port), *common])
            return
        # One listening socket per process on the same port (SO_REUSEPORT: the kernel
        # spreads new connections evenly; one shared socket let the busiest process take
        # most keep-alive clients). This process opens them all; the others are plain
        # Daphnes adopting theirs (`--fd`); start-up work (migrations, the sweeper) stays
        # here.
        listeners = [socket.create_server((host, port), backlog=1024, reuse_port=True)
                     for _ in range(processes)]
        fds = []
        for listener in listeners:
            listener.setblocking(False)
            fds.append(listener.fileno())
        others = [subprocess.Popen([sys.executable, "-m", "daphne", "--fd", str(fd), *common],
                                   pass_fds=(fd,), preexec_fn=_die_with_parent)
                  for fd in fds[1:]]
        self.stdout.write(f"{processes} server processes: this one and {[p.pid for p in others]}")
        try:
            CommandLineInterface().run(["--fd", str(fds[0]), *common])
        finally:
            for other in others:
                other.send_signal(signal.SIGTERM)
            for other in others:
                try:
                    other.wait(SHUTDOWN_S)
                except subprocess.TimeoutExpired:
                    other.kill()
            for listener in listeners:
                listener.close()


def _die_with_parent() -> None:
    """In a server child, before exec: SIGKILL when this process dies (Linux), so a
    killed server leaves no Daphne behind holding the port."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
