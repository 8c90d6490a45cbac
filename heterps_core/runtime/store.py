"""The rendezvous store: torch.distributed's TCPStore at the coordinator."""

from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist

from heterps_core.runtime.errors import RunConfigError

STORE_TIMEOUT = timedelta(seconds=60)


def parse_address(text: str, where: str = "coordinator") -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RunConfigError(where, f"must be HOST:PORT, got {text!r}")
    return host, int(port)


def serve(host: str = "127.0.0.1", port: int = 0) -> dist.TCPStore:
    """The coordinator's store; port 0 picks a free port (read it back from `.port`)."""
    return dist.TCPStore(
        host,
        port,
        world_size=None,
        is_master=True,
        timeout=STORE_TIMEOUT,
        wait_for_workers=False,
        use_libuv=True,
    )


def connect(address: str, timeout: timedelta = STORE_TIMEOUT) -> dist.TCPStore:
    host, port = parse_address(address)
    return dist.TCPStore(host, port, is_master=False, timeout=timeout, use_libuv=True)
