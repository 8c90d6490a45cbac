"""Job processes forked from a pre-started template, so none of them imports torch itself.

A fresh interpreter per job process pays `import torch` (1-4 s here, a minute and more on a
loaded machine) before its first mini-batch. The template (`template_process.py`) is one
process that has imported torch, the job process's code and the zoo's models, and has run
no torch operation and started no thread (it checks: one thread, or it refuses to serve).
Forking it is then as safe as a fresh start: no lock can be held by a thread that does not
exist in the child, and OpenMP's and torch's intra-op pools are created in each child, after
it has set its own thread count (the template starts with OPENBLAS_NUM_THREADS=1, since
OpenBLAS starts its threads when numpy loads; each child's numpy BLAS stays single-threaded).

**Protocol.** The launcher and its template share a SOCK_SEQPACKET socket pair, one JSON
message per packet. The launcher sends `{id, module, args, env, cwd}` with the log file's
descriptor attached (SCM_RIGHTS); the template forks, the child sets its environment,
working directory, stdout/stderr, PR_SET_PDEATHSIG, its command line as `ps` shows it and
its malloc settings, then runs `module.main(args)` and `os._exit`s with what it returns.
The template answers `{spawned: id, pid}` with a pidfd of the child attached, and
`{exited: pid, code}` when the child ends (code as Popen's `returncode`: -N for signal N).

**Why pidfds and reports, not waitpid.** A forked job process is the template's child, not
the launcher's: only the template can reap it and learn its exit code, so `poll`/`wait` come
from the template's reports, which arrive in order (`spawned` before `exited`). Signals go
through the pidfd (`pidfd_send_signal`), which names that very process even after its pid
is reused, so a SIGTERM or SIGKILL from `processes.stop_all` never hits a stranger.

**Lifetime.** The template dies with the thread that started it (PR_SET_PDEATHSIG, as any
spawned process), and its children die with it, so nothing outlives the launcher; a
launcher closes its template when its job ends (EOF: the template kills what is left and
exits). Should the template die first, its children are killed with it and are reported
as killed by SIGKILL. Process group and session are the launcher's, as with `spawn`.

`HETERPS_FORKSERVER=0` starts fresh interpreters (`processes.spawn`) instead; a template
that fails to start or to fork does so too, with a warning.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

from heterps_core import processes
from heterps_core.runtime.template_process import MAX_MESSAGE, TITLE_ROOM

ENV_SWITCH = "HETERPS_FORKSERVER"
SERVER_MODULE = "heterps_core.runtime.template_process"
LOST_GRACE_S = 5.0  # how long the children of a dead template may take to die with it
log = logging.getLogger(__name__)


class TemplateError(RuntimeError):
    """The template could not start, or went away."""


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1") != "0"


class ForkedProcess:
    """A job process the template forked: what `processes.stop_all` and the launcher use of
    a Popen (pid, poll, wait, send_signal, terminate, kill, returncode)."""

    def __init__(self, template: Template, pid: int, pidfd: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None
        self._template = template
        self._pidfd = pidfd

    def poll(self) -> int | None:
        if self.returncode is None:
            self._template.pump(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = 0.1 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self._template.pump(min(left, 0.1))
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            # ProcessLookupError: it has exited; the template's report is on its way.
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def ended(self, code: int) -> None:
        self.returncode = code
        os.close(self._pidfd)

    def died_with_template(self) -> None:
        # Killed by PR_SET_PDEATHSIG; its real status went with the template.
        select.select([self._pidfd], [], [], LOST_GRACE_S)
        self.ended(-signal.SIGKILL)


class Template:
    """One template process: started at once (its imports run in the background), forks on
    `spawn`, gone after `close`."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = processes.child_env()
        env["OPENBLAS_NUM_THREADS"] = "1"  # else numpy's import starts threads (see above)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", SERVER_MODULE, str(theirs.fileno()), "-" * TITLE_ROOM],
            pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
            preexec_fn=processes.die_with_parent,
        )
        theirs.close()
        self._sock = ours
        self._lock = threading.RLock()
        self._ready = False
        self._error: str | None = None
        self._next_id = 0
        self._spawned: dict[int, ForkedProcess] = {}
        self._children: dict[int, ForkedProcess] = {}

    @property
    def alive(self) -> bool:
        return self._error is None and self._proc.poll() is None

    def spawn(
        self, module: str, args: Sequence[str], env: Mapping[str, str], log: IO[bytes] | None
    ) -> ForkedProcess:
        """Fork `module.main(args)` with `env`, stdout and stderr to `log` (None: ours)."""
        with self._lock:
            while not self._ready:
                self._check()
                self.pump(None)
            self._check()
            self._next_id += 1
            request = {"id": self._next_id, "module": module, "args": list(args),
                       "env": dict(env), "cwd": os.getcwd()}
            fds = [log.fileno()] if log is not None else []
            try:
                socket.send_fds(self._sock, [json.dumps(request).encode()], fds)
            except OSError as exc:
                raise TemplateError(f"the template is gone ({exc})") from None
            while self._next_id not in self._spawned:
                self._check()
                self.pump(None)
            return self._spawned.pop(self._next_id)

    def pump(self, timeout: float | None) -> None:
        """Take the template's reports, waiting up to `timeout` s for the first (None: ever)."""
        with self._lock:
            if self._error is not None or self._sock.fileno() < 0:
                return
            wait = timeout
            while select.select([self._sock], [], [], wait)[0]:
                try:
                    data, fds, _, _ = socket.recv_fds(self._sock, MAX_MESSAGE, 1)
                except ConnectionError:
                    data, fds = b"", []
                if not data:
                    self._lost()
                    return
                self._take(json.loads(data), fds)
                wait = 0.0

    def _take(self, message: dict[str, Any], fds: list[int]) -> None:
        if "exited" in message:
            self._children.pop(message["exited"]).ended(message["code"])
        elif "spawned" in message:
            pid = message["pid"]
            child = ForkedProcess(self, pid, fds[0], [SERVER_MODULE, str(pid)])
            self._children[pid] = self._spawned[message["spawned"]] = child
        elif "ready" in message:
            self._ready = True
        else:
            self._error = message.get("error", repr(message))

    def _lost(self) -> None:
        self._error = self._error or "the template process ended"
        for child in self._children.values():
            child.died_with_template()
        self._children.clear()

    def _check(self) -> None:
        if self._error is not None:
            raise TemplateError(self._error)

    def close(self) -> None:
        """End the template (it kills any child still running) and reap it."""
        with self._lock:
            if self._sock.fileno() < 0:
                return
            self._sock.close()
            try:
                self._proc.wait(LOST_GRACE_S)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            for child in self._children.values():
                child.died_with_template()
            self._children.clear()


class Starter:
    """How a launcher starts its job processes: forked from a template (a warm one from
    `prestart` if there is one), else as fresh interpreters (`processes.spawn`)."""

    def __init__(self) -> None:
        self._template = take() if enabled() else None

    def start(
        self, module: str, args: Sequence[str], env: Mapping[str, str], log: IO[bytes] | None
    ) -> processes.Process:
        if self._template is not None:
            try:
                return self._template.spawn(module, args, env, log)
            except TemplateError as exc:
                log_warning(exc)
                self._template.close()
                self._template = None
        return processes.spawn(module, args, env, log)

    def close(self) -> None:
        if self._template is not None:
            self._template.close()


def log_warning(exc: TemplateError) -> None:
    log.warning("no template for job processes (%s); starting fresh interpreters", exc)


_warm: Template | None = None
_warm_lock = threading.Lock()


def prestart() -> None:
    """Start a template now, for the next launcher of this process to take (its imports run
    while the caller does other work). It dies with the calling thread."""
    global _warm
    if not enabled():
        return
    with _warm_lock:
        if _warm is None or not _warm.alive:
            _warm = Template()


def keep_warm() -> None:
    """`prestart` for a later job, where the template can wait for it: on the main thread
    (a Celery prefork pool process runs its tasks there). A template started on another
    thread dies when that thread ends (PR_SET_PDEATHSIG follows the thread), so a thread per
    job would pay an import of torch for nothing."""
    if threading.current_thread() is threading.main_thread():
        prestart()


def discard() -> None:
    """Close the warm template nobody will take (a run refused after `prestart`), so the
    caller's process is left with no child running (a test runner calls `heterps run`
    in-process; a command's own exit would end it anyway)."""
    global _warm
    with _warm_lock:
        warm, _warm = _warm, None
    if warm is not None:
        warm.close()


def take() -> Template:
    """The warm template (`prestart`), else a new one."""
    global _warm
    with _warm_lock:
        warm, _warm = _warm, None
    if warm is not None and warm.alive:
        return warm
    if warm is not None:
        warm.close()
    return Template()
