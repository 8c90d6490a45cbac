"""The base class every `heterps` subcommand derives from."""

from __future__ import annotations

import argparse
from typing import ClassVar


class Command:
    name: ClassVar[str]
    help: ClassVar[str]

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Declare the subcommand's arguments."""

    def run(self, args: argparse.Namespace) -> int:
        raise NotImplementedError
