"""The server's and a worker's ends of their connection send without Nagle's delay: every
row pull is a request/answer exchange whose answer is written as two sends (length, then
bytes), which Nagle held back until the peer's delayed ACK (40 ms a step on Linux)."""

from __future__ import annotations

import socket
import threading
from multiprocessing.connection import Client, Connection, Listener

import numpy as np

from heterps_core.dataparallel.process.nodelay import no_delay


def nodelay_of(conn: Connection) -> int:
    sock = socket.socket(fileno=conn.fileno())
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        sock.detach()


def test_both_ends_send_at_once_and_still_carry_messages() -> None:
    with Listener(("127.0.0.1", 0), authkey=b"k") as listener:
        accepted: list[Connection] = []
        thread = threading.Thread(target=lambda: accepted.append(no_delay(listener.accept())))
        thread.start()
        client = Client(listener.address, authkey=b"k")
        thread.join()
        server = accepted[0]
        assert nodelay_of(client) == 0  # the default, which the fix changes
        no_delay(client)
        assert nodelay_of(server) == 1 and nodelay_of(client) == 1
        rows = np.arange(100_000, dtype=np.float32)  # larger than one send: length, then bytes
        client.send(("pull", 3))
        assert server.recv() == ("pull", 3)
        server.send(rows)
        assert np.array_equal(client.recv(), rows)
        client.close()
        server.close()
