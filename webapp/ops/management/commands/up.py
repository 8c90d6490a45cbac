"""`manage.py up`: migrate, admin account once, demo data, then serve HTTP + websockets."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from webapp.background import leases, sweeper
from webapp.demo import demo_wanted, load_demo
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

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(settings.MODE.describe())
        call_command("migrate", interactive=False, verbosity=0)
        # Hashed, compressed copies of static/ (webapp/staticstorage.py): seconds, and only
        # changed files are copied again.
        call_command("collectstatic", interactive=False, verbosity=0)
        admin, password = ensure_admin()
        if password:
            self.stdout.write(self.style.WARNING(
                f"\nCreated the admin account. Username: {admin.get_username()}  "
                f"Password: {password}\nThis password is shown only now "
                "(change it later with `manage.py changepassword`).\n"
            ))
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
            from workers import embedded

            worker = embedded.start(concurrency=options["worker_threads"])
        url = f"http://{options['host']}:{options['port']}/"
        self.stdout.write(self.style.SUCCESS(f"Serving HeterPS on {url} (Ctrl-C stops)"))
        try:
            self._serve(options["host"], options["port"])
        finally:
            self._shut_down(worker)

    def _shut_down(self, worker: Any) -> None:
        """Stop within seconds: running work is told to stop (its runtime processes end;
        the records say "interrupted"), then the worker threads are given SHUTDOWN_S."""
        sweeper.stop_periodic()
        stopped = leases.stop_local()
        if stopped:
            self.stdout.write(f"stopping {stopped} running work item(s)")
        if worker is not None:
            worker.stop(timeout_s=SHUTDOWN_S)

    def _serve(self, host: str, port: int) -> None:
        from daphne.cli import CommandLineInterface

        CommandLineInterface().run(
            # A websocket handshake waits for a database connection from the pool (the
            # permission check); under load that takes longer than Daphne's default 5 s.
            ["--bind", host, "--port", str(port), "--proxy-headers",
             "--websocket_connect_timeout", "30", "webapp.asgi:application"]
        )
