from typing import Any

from django.core.management.base import BaseCommand

from webapp.demo import load_demo
from webapp.ops.services import ensure_admin


class Command(BaseCommand):
    help = "Create the Demo project (owned by the first superuser) and load the demo data."

    def handle(self, *args: Any, **options: Any) -> None:
        admin, password = ensure_admin()
        if password:
            self.stdout.write(f"Created superuser {admin.get_username()!r} password {password}")
        for name, created in load_demo(admin).items():
            self.stdout.write(f"demo {name}: {created} new")
