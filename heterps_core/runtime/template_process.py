"""The template process: `python -m heterps_core.runtime.template_process FD`.

It imports torch, the job process's code and the zoo's models once, then forks a job
process whenever its launcher asks (the protocol and why it is safe: `template.py`). It runs
no torch operation and starts no thread: after its imports it checks that it is still one
thread and refuses to serve otherwise, so every fork copies a process in a known state.

Each child undoes what it must not inherit (the template's socket and pidfds, its signal
dispositions, its environment, its working directory, its stdout/stderr), dies with the
template (PR_SET_PDEATHSIG; the template dies with its launcher), shows its own command
line in `ps`, and runs the job module's `main(argv)`.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import select
import signal
import socket
import sys
import traceback
from typing import Any

# torch._dynamo: a job process's first init of a table on the `meta` device (tables_on_meta:
# nn.init on meta runs torch's reference ops) imports it, 1.5 s and more here; only imported.
PRELOAD = ("heterps_core.runtime.worker", "torch._dynamo")
MAX_MESSAGE = 1 << 20
# Room in the template's own argv for a child's command line (`ps`, /proc/PID/cmdline).
TITLE_ROOM = 400
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def preload() -> None:
    for module in PRELOAD:
        importlib.import_module(module)
    from heterps_core import zoo

    for name in zoo.names():  # loads every built-in model's module
        zoo.get(name)


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    socket.send_fds(sock, [json.dumps(message).encode()], fds or [])


def serve(sock: socket.socket) -> None:
    """Fork on request, report every child's exit, until the launcher closes the socket."""
    children: dict[int, int] = {}  # pidfd -> pid
    # ConnectionError: the launcher went away without closing (it exited or was killed).
    with contextlib.suppress(ConnectionError):
        take_requests(sock, children)
    for pidfd, pid in children.items():  # not stopped by the launcher: nothing outlives it
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(pidfd)


def take_requests(sock: socket.socket, children: dict[int, int]) -> None:
    """Until the launcher closes: fork what it asks for, report what ended."""
    while True:
        watched: list[int] = [sock.fileno(), *children]
        ready, _, _ = select.select(watched, [], [])
        for pidfd in (fd for fd in ready if fd in children):
            pid = children.pop(pidfd)
            _, status = os.waitpid(pid, 0)
            os.close(pidfd)
            send(sock, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})
        if sock.fileno() in ready:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 1)
            if not data:
                return  # the launcher is done
            request = json.loads(data)
            log_fd = fds[0] if fds else None
            pid = fork(request, log_fd, [sock.fileno(), *children])
            if log_fd is not None:
                os.close(log_fd)
            pidfd = os.pidfd_open(pid)
            children[pidfd] = pid
            send(sock, {"spawned": request["id"], "pid": pid}, [pidfd])


def fork(request: dict[str, Any], log_fd: int | None, inherited: list[int]) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    template = os.getpid()
    pid = os.fork()
    if pid == 0:
        run_child(request, log_fd, inherited, template)  # never returns
    return pid


def run_child(
    request: dict[str, Any], log_fd: int | None, inherited: list[int], template: int
) -> None:
    code = 1
    try:
        from heterps_core.processes import die_with_parent

        die_with_parent()
        if os.getppid() != template:  # the template died before the line above
            os._exit(1)
        for fd in inherited:
            os.close(fd)
        if log_fd is not None:
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.close(log_fd)
        become(request)
        main = importlib.import_module(request["module"]).main
        code = int(main(list(request["args"])) or 0)
    except SystemExit as exc:
        code = exit_code(exc)
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def become(request: dict[str, Any]) -> None:
    """What a fresh `python -m MODULE ARGS` with this environment would have been."""
    # The template changed only SIGINT (the interpreter's own start-up set the others).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env: dict[str, str] = request["env"]
    old_cwd = os.getcwd()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(env)
    if sys.path and sys.path[0] == old_cwd:
        sys.path[0] = request["cwd"]  # `python -m` puts the working directory first
    for entry in reversed(env.get("PYTHONPATH", "").split(os.pathsep)):
        if entry and entry not in sys.path:
            sys.path.insert(1, entry)
    malloc_settings(env)
    sys.argv = [request["module"], *request["args"]]
    set_title(" ".join([sys.executable, "-m", request["module"], *request["args"]]))


def malloc_settings(env: dict[str, str]) -> None:
    # glibc reads MALLOC_*_ when malloc starts, long before the fork: apply them again.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    for name, param in (("MALLOC_TRIM_THRESHOLD_", M_TRIM_THRESHOLD),
                        ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD)):
        if env.get(name, "").isdigit():
            libc.mallopt(param, ctypes.c_int(min(int(env[name]), 2**31 - 1)))


def set_title(text: str) -> None:
    """Write `text` over this process's argv, so `ps` and /proc/PID/cmdline show the job
    process's command line, not the template's (what setproctitle does on Linux)."""
    fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48, 49)
    data = text.encode()[: end - start - 1]
    ctypes.memmove(start, data + b"\0" * (end - start - len(data)), end - start)


def exit_code(exc: SystemExit) -> int:
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[0]))
    # Ctrl-C reaches the whole process group: the launcher stops the jobs, the template
    # goes when its launcher closes the socket (or dies).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        preload()
    except BaseException as exc:
        send(sock, {"error": f"the template could not import the job code: {exc!r}"})
        return 1
    if (count := threads()) != 1:
        send(sock, {"error": f"the template runs {count} threads after its imports; "
                             "forking it would not be safe"})
        return 1
    try:
        send(sock, {"ready": os.getpid()})
    except OSError:
        return 0  # the launcher discarded the template while it imported (a refused run)
    serve(sock)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # torch's teardown takes seconds on a busy machine and saves nothing
