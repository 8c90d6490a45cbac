"""Which network interface gloo uses: the one on the route to the coordinator.

Without `GLOO_SOCKET_IFNAME` gloo binds to the address the machine's host name resolves to,
often 127.0.0.1 (/etc/hosts), and tells its peers to dial that: a run across machines then
fails with a gloo connection error. The runtime sets it instead, when the environment does
not, to the interface holding the local address the kernel picks to reach the coordinator
(a UDP socket's `connect` sends nothing; `getsockname` reads the address), for the job
processes it starts: the launcher for its local ranks, each agent for its own. Both say
which they used: "gloo: using interface veth-b (10.231.0.2, the route to 10.231.0.1)".
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import socket
import struct
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ENV = "GLOO_SOCKET_IFNAME"
SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's (primary) IPv4 address
# A coordinator listening on every interface has no one address to route to: its local
# ranks use the interface of the default route (reached through this public address; no
# packet is sent).
DEFAULT_ROUTE_PROBE = "8.8.8.8"
EVERY_INTERFACE = ("0.0.0.0", "::", "")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class GlooInterface:
    name: str
    why: str  # "10.231.0.2, the route to 10.231.0.1", or "GLOO_SOCKET_IFNAME as set"

    def describe(self) -> str:
        return f"{self.name} ({self.why})"


def for_coordinator(host: str, environ: Mapping[str, str] = os.environ) -> GlooInterface | None:
    """The interface gloo should use to reach the coordinator at `host`: the environment's
    `GLOO_SOCKET_IFNAME` if set, else the route's; None when neither can be told (gloo then
    falls back on the host name, as before)."""
    if environ.get(ENV):
        return GlooInterface(environ[ENV], f"{ENV} as set")
    every = host in EVERY_INTERFACE
    try:
        local = local_address_to(DEFAULT_ROUTE_PROBE if every else host)
    except OSError:
        return None
    name = holder(local, addresses())
    if name is None:
        return None
    if every:
        return GlooInterface(name, f"{local}, the default route")
    if ipaddress.ip_address(local).is_loopback or local == host:
        return GlooInterface(name, f"{local}, the coordinator's own address")
    return GlooInterface(name, f"{local}, the route to {host}")


def choose(host: str, who: str) -> GlooInterface | None:
    """`for_coordinator(host)`, said on stderr as `who` ("heterps agent NAME: gloo: using
    interface ...") unless the coordinator is on loopback (a one-machine run: lo)."""
    interface = for_coordinator(host)
    if host not in LOOPBACK:
        print(f"{who}: {announce(interface, host)}", file=sys.stderr, flush=True)
    return interface


def announce(interface: GlooInterface | None, host: str) -> str:
    """The line the launcher and the agents print about their choice."""
    if interface is None:
        return (f"gloo: no interface found on the route to {host or 'the default route'}; "
                f"{ENV} left unset (gloo uses the address of this machine's host name)")
    return f"gloo: using interface {interface.describe()}"


def local_address_to(host: str) -> str:
    """The source address the kernel picks for packets to `host` (nothing is sent)."""
    family, kind, proto, _, sockaddr = socket.getaddrinfo(host, 9, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.connect(sockaddr)
        return str(probe.getsockname()[0])


def holder(address: str, by_interface: Mapping[str, Sequence[str]]) -> str | None:
    """The interface holding `address` (a link-local IPv6 address may carry its %scope)."""
    wanted = ipaddress.ip_address(address.split("%", 1)[0])
    for name, held in by_interface.items():
        if any(ipaddress.ip_address(a.split("%", 1)[0]) == wanted for a in held):
            return name
    return None


def addresses() -> dict[str, list[str]]:
    """Every interface's addresses: IPv4 by ioctl, IPv6 from /proc/net/if_inet6."""
    found: dict[str, list[str]] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            with contextlib.suppress(OSError):  # no IPv4 address on it
                request = struct.pack("256s", name.encode()[:15])
                reply = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, request)
                found.setdefault(name, []).append(socket.inet_ntoa(reply[20:24]))
    with contextlib.suppress(OSError), open("/proc/net/if_inet6") as table:  # no IPv6: none
        for name, held in parse_if_inet6(table.read()).items():
            found.setdefault(name, []).extend(held)
    return found


def parse_if_inet6(text: str) -> dict[str, list[str]]:
    """/proc/net/if_inet6: 'ADDRESS(32 hex) IFINDEX PREFIXLEN SCOPE FLAGS NAME' per line."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 6 and len(fields[0]) == 32:
            address = ipaddress.IPv6Address(bytes.fromhex(fields[0]))
            found.setdefault(fields[5], []).append(str(address))
    return found
