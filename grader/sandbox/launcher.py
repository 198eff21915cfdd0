"""Launching the sandbox's server (zygote.py, inside bubblewrap: namespaces.py) and the
grader's handle on it, `Zygote`: one per grading thread, started on first use or launched
earlier by the grading command and handed over. Each student's process is forked from it
(session.py asks), so a submission costs a fork, not a fresh interpreter."""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import multiprocessing.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from grader.sandbox import namespaces, proc
from grader.sandbox.confinement import Confinement
from grader.startup.huge_pages import TUNING

log = logging.getLogger(__name__)


@dataclass
class Launched:
    """A sandbox server as its launcher hands it over (to a grading process of the pool, which
    may be another process: the socket travels as a file descriptor)."""

    sock: socket.socket  # the grader's end
    pid: int  # the launched process (bwrap's, when sandboxed), as this machine knows it
    scratch: str  # the student's working folder, as the server sees it
    started: float  # time.monotonic() at the launch (one clock for every process here)


def launch(confined: Confinement, preload: tuple[str, ...] = (),
           cpu: int | None = None) -> tuple[Launched, subprocess.Popen]:
    """Start a sandbox server (zygote.py) without waiting for it to import torch; `preload`:
    the modules the assignment declares its students' processes import (imported there once;
    grader.pipeline.pools.sandbox_preload_for); `cpu`: the core it and its students' processes keep
    to (grader.pipeline.pools.worker_cpu), None for any."""
    sock, theirs = socket.socketpair()
    if confined.sandboxed:
        scratch = namespaces.SCRATCH
        setup = {"sandboxed": True, "empty": [scratch, "/tmp", "/dev/shm"]}
    else:
        scratch = tempfile.mkdtemp(prefix="grade-scratch-")
        setup = {"sandboxed": False, "empty": [scratch]}
    setup["preload"], setup["cpu"] = list(preload), cpu
    argv = [sys.executable, "-m", "grader.sandbox.zygote", str(theirs.fileno()),
            json.dumps(setup)]
    env = {**namespaces.environment(), **TUNING}  # (the server takes TUNING out as it starts)
    if not confined.sandboxed:  # no private /tmp: everything of the student's in scratch
        env.update(HOME=scratch, TMPDIR=scratch, IPYTHONDIR=f"{scratch}/.ipython",
                   MPLCONFIGDIR=f"{scratch}/.matplotlib")
    started = time.monotonic()
    proc = subprocess.Popen(namespaces.command(argv, env=env) if confined.sandboxed else argv,
                            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, cwd=scratch if not confined.sandboxed else None)
    theirs.close()
    return Launched(sock, proc.pid, scratch, started), proc


class Zygote:
    """The grader's handle on zygote.py: one per grading process, started on first use, or
    launched earlier by the grading command and handed over (`launched`)."""

    def __init__(self, confined: Confinement, launched: Launched | None = None,
                 preload: tuple[str, ...] = ()):
        self.confined = confined
        self.proc = None  # the server's Popen, where this process launched it
        if launched is None:
            launched, self.proc = launch(confined, preload)
        self.sock, self.scratch, self.pid = launched.sock, launched.scratch, launched.pid
        self.lock = threading.Lock()
        self.reader = self.sock.makefile("rb")
        ready = json.loads(self.reader.readline() or b"{}")
        if ready.get("ready") is not True:
            error = self.proc.stderr.read().decode(errors="replace")[-1000:] if \
                self.proc is not None and self.proc.poll() is not None else ""
            raise RuntimeError(f"the grader's worker server did not start: {error}")
        self.start_seconds = time.monotonic() - launched.started
        self.start_cpu = float(ready.get("cpu", 0.0))
        parts = ready.get("parts")  # where that CPU went (a report of the server's: bench only)
        self.start_parts = {str(k): float(v) for k, v in parts.items()
                            if isinstance(v, (int, float))} if isinstance(parts, dict) else {}
        for missing in ready.get("missing") or []:  # a declared module that is not installed
            log.warning("the sandbox could not import what the assignment declares its "
                        "students need (sandbox_preload): %s", str(missing)[:300])
        self.host_pid = proc.host_pid(self.pid, ready["pid"]) if confined.sandboxed else self.pid

    @property
    def running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        fields = proc.stat_fields(self.host_pid)  # not our child: its state, zombie or gone
        return fields is not None and fields[0] not in "ZX"

    def _ask(self, request: dict, fds=()) -> dict:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
            return json.loads(self.reader.readline())

    def fork(self, config: dict, fd: int) -> tuple[int, int]:
        """A new worker: (its pid as the zygote sees it, its pid on this machine)."""
        pid = self._ask({"op": "fork", "config": config}, [fd])["pid"]
        host = proc.host_pid(self.host_pid, pid) if self.confined.sandboxed else pid
        return pid, host

    def exit_code(self, pid: int) -> int | None:
        return self._ask({"op": "status", "pid": pid})["code"]

    def sweep(self) -> dict:
        """Between two students: no process of the last one left, its files and IPC objects
        gone. Where something could not be removed the server has ended itself (zygote.py):
        this one is stopped, and the next student gets a fresh sandbox."""
        answer = self._ask({"op": "sweep"})
        if answer.get("unswept"):
            log.warning("the sandbox could not be swept for the next student (%s): starting "
                        "a fresh one", "; ".join(map(str, answer["unswept"]))[:500])
            self.stop()
        return answer

    def stop(self) -> None:
        if self.sock.fileno() == -1:
            return  # stopped already
        self.reader.close()
        self.sock.close()  # the zygote sees the end of its socket and exits
        if self.proc is not None:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        else:  # its launcher reaps it
            deadline = time.monotonic() + 5
            while self.running and time.monotonic() < deadline:
                time.sleep(0.01)
            with contextlib.suppress(OSError):
                if self.running:
                    os.kill(self.host_pid, signal.SIGKILL)
        if not self.confined.sandboxed:
            shutil.rmtree(self.scratch, ignore_errors=True)


_zygotes: dict[tuple[Confinement, int], Zygote] = {}


def zygote(confined: Confinement, launched: Launched | None = None,
           preload: tuple[str, ...] = ()) -> Zygote:
    """This thread's zygote. One per thread, because a sweep ends every process in its sandbox:
    two students graded at once (a Dask worker's threads) must never share one. `launched`:
    a server started for this thread by another process, taken if it has none running;
    `preload`: what a server started here imports for the students (one running already is
    kept: a module it lacks costs a student's process time, never a grade)."""
    key = (confined, threading.get_ident())
    z = _zygotes.get(key)
    if z is None or not z.running:
        z = _zygotes[key] = Zygote(confined, launched, preload)
        atexit.register(z.stop)
        # A process-pool worker ends through multiprocessing, which skips atexit but runs
        # these finalizers: the sandbox is gone before the grading run reports its end.
        multiprocessing.util.Finalize(z, z.stop, exitpriority=100)
    return z
