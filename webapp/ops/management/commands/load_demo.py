from typing import Any

from django.core.management.base import BaseCommand

from webapp.ops.demo import admin_notice, already_loaded, load_demo
from webapp.ops.services import ensure_admin


class Command(BaseCommand):
    help = ("Create the Demo project (owned by the first superuser) and load the demo data "
            "once; --force loads it again (re-creating deleted demo rows).")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--force", action="store_true",
                            help="load every loader again, even if it ran before")

    def handle(self, *args: Any, **options: Any) -> None:
        admin, password = ensure_admin()
        if password:
            self.stdout.write(admin_notice(admin.get_username(), password, self.stdout))
        if already_loaded() and not options["force"]:
            self.stdout.write("demo data already loaded (--force loads it again)")
        for name, created in load_demo(admin, force=options["force"]).items():
            self.stdout.write(f"demo {name}: {created} new")
