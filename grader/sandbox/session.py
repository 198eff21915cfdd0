"""Starting, talking to and cleaning up a student's process.

Processes are forked from a server (zygote.py) that lives in the sandbox (namespaces.py) and has
already imported torch and IPython, so a submission costs a fork, not a fresh interpreter
(start-up is paid once per grading process). Each student's turn has a cgroup of its own
(cgroup.py) where the machine allows it. Every wait has a deadline; a process that dies, hangs
or floods is ended with everything it started, and the sandbox is swept for the next student.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import logging
import math
import multiprocessing.util
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.record import Flag, flag
from grader.sandbox import cgroup, namespaces
from grader.sandbox.proc import stat, stat_fields
from grader.startup.huge_pages import TUNING

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Confinement:
    """How students' processes are isolated on this machine (see namespaces.py, cgroup.py)."""

    sandboxed: bool  # inside bubblewrap's namespaces, as an unprivileged user
    cgroups: bool  # memory and process count bounded by a cgroup per turn (else rlimits)
    why_not: str = ""  # what is missing, in words

    def describe(self) -> str:
        where = namespaces.describe() if self.sandboxed else f"NONE ({self.why_not})"
        limits = ("a cgroup per student (memory incl. /dev/shm, process count)" if self.cgroups
                  else "rlimits (no writable cgroup hierarchy)")
        return f"{where}; limits: {limits}; Landlock as a second layer where the kernel has it"

    def flags(self) -> list[Flag]:
        """The flags every submission graded under this confinement carries (the instructor's
        choice to grade without the sandbox: each grade it gave is to be read with it)."""
        out = []
        if not self.sandboxed:
            out.append(flag("unconfined", "graded WITHOUT the sandbox (--unconfined): "
                            + self.why_not))
        return out

    def conditions(self) -> list[str]:
        """The machine's conditions a run graded under: the same for every student, so said
        once (the run's banner, the status file's run, the class report), not per student."""
        out = []
        if not self.cgroups:
            out.append("memory and process limits were rlimits, not a cgroup (no writable "
                       "cgroup hierarchy here)")
        return out


_found: dict[bool, Confinement] = {}  # confinement(unconfined)'s answers in this process


def confinement(unconfined: bool = False) -> Confinement:
    """The isolation this machine gives; raises IsolationUnavailable when the sandbox cannot
    be built, unless the instructor asked to grade `unconfined` anyway. Worked out once per
    process (namespaces.probe starts a sandboxed interpreter), or taken over (`adopt`)."""
    found = _found.get(unconfined)
    if found is None:
        why = namespaces.probe()
        if why and not unconfined:
            raise namespaces.IsolationUnavailable(
                f"cannot isolate students' code here: {why}. Fix that, or pass --unconfined to "
                "grade without isolation (every submission is then flagged 'unconfined')")
        found = _found[unconfined] = Confinement(
            sandboxed=not why and not unconfined, cgroups=cgroup.available() is None,
            why_not=why or ("the instructor asked for it" if unconfined else ""))
    return found


def adopt(unconfined: bool, found: Confinement) -> None:
    """Take `found` as this process's confinement(unconfined): what the process that started
    it found on this machine moments before (a grading pool's processes take the command's
    rather than each starting a sandboxed interpreter to probe again)."""
    _found[unconfined] = found


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
        self.host_pid = _host_pid(self.pid, ready["pid"]) if confined.sandboxed else self.pid

    @property
    def running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        fields = stat_fields(self.host_pid)  # not our child: its state, zombie or gone
        return fields is not None and fields[0] not in "ZX"

    def _ask(self, request: dict, fds=()) -> dict:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
            return json.loads(self.reader.readline())

    def fork(self, config: dict, fd: int) -> tuple[int, int]:
        """A new worker: (its pid as the zygote sees it, its pid on this machine)."""
        pid = self._ask({"op": "fork", "config": config}, [fd])["pid"]
        host = _host_pid(self.host_pid, pid) if self.confined.sandboxed else pid
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


def _host_pid(ancestor: int, ns_pid: int) -> int:
    """The pid on this machine of the process that `ancestor`'s PID namespace calls ns_pid
    (a child of `ancestor`, or further down): found by following the kernel's lists of
    children; every process of the machine is looked at only if that finds nothing."""
    todo = _children(ancestor)
    while todo:
        pid = todo.pop(0)
        if _innermost_pid(pid) == ns_pid:
            return pid
        todo += _children(pid)
    for pid in sorted(descendants(ancestor)):
        if _innermost_pid(pid) == ns_pid:
            return pid
    raise ProcessLookupError(f"no process {ns_pid} in the sandbox of process {ancestor}")


def _innermost_pid(pid: int) -> int | None:
    """The number a process has in its own PID namespace, if that is not this one's."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:") and len(line.split()) > 2:
                return int(line.split()[-1])
    return None


def _children(pid: int) -> list[int]:
    """Direct children, from the kernel's own list (no scan of /proc)."""
    found = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text()
                      .split()]
    return found


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


WALL_FACTOR = 3  # wall-clock cap of a cell, in multiples of its CPU-time budget
QUICK = 0.05  # seconds an answer may take before the process's CPU time is watched


@dataclass
class Limits:
    """What one notebook's run may take. The one description of a run's limits: the command
    line sets them for a run, an assignment's metadata for its notebooks (grader.metadata),
    and they travel to the pool as this value (as its fields in nbgrader's configuration)."""

    cell_timeout: float = 120.0  # CPU seconds one cell (or one call from a test) may take
    notebook_timeout: float = 900.0  # seconds for the whole notebook
    memory_bytes: int = 6 * 2**30  # address space of the student's process
    max_processes: int = 64  # processes the student's code may start (when enforceable)
    max_file_bytes: int = 256 * 2**20  # largest file the student's code may write

    def updated(self, fields) -> Limits:
        """These limits with `fields` ({name: value}) replacing theirs; names that are not
        fields of Limits (an assignment's metadata may hold anything) are left out."""
        known = {f.name for f in dataclasses.fields(self)}
        return dataclasses.replace(self, **{k: v for k, v in fields.items() if k in known})


class WorkerDied(Exception):
    """The student's process ended or stopped answering; `reason` says how."""

    def __init__(self, reason: str, kind: str):
        super().__init__(reason)
        self.kind = kind  # "timeout", "crash", "memory", "flood"


class RemoteError(Exception):
    """An exception raised by the student's code, as reported by their process."""

    def __init__(self, ename: str, evalue: str, traceback: list[str]):
        super().__init__(f"{ename}: {evalue}")
        self.ename, self.evalue, self.traceback = ename, evalue, traceback


def landlock_paths() -> list[str]:
    """Folders the student's process may read (Landlock, the second layer): what Python needs."""
    system = [p for p in ("/usr", "/lib", "/lib64", "/etc", "/proc", "/dev", "/opt")
              if os.path.isdir(p)]
    return sorted(set(namespaces.readable_paths()) | set(system))


@dataclass
class Session:
    """One student's process for one notebook: forked from the zygote inside the sandbox, in a
    cgroup of its own (where cgroups are writable), with `files` written into its scratch."""

    files: dict[str, bytes]
    limits: Limits = field(default_factory=Limits)
    landlock: bool = True
    confined: Confinement = field(default_factory=confinement)
    deadline: float = 0.0  # time.monotonic() by which the whole notebook must be done
    pid: int | None = None  # as the zygote knows it (inside the sandbox)
    host_pid: int | None = None  # as this machine knows it
    exit_code: int | None = None
    killed: bool = False  # by us: whatever its state, it is finished
    conn: object = None
    killed_for: str | None = None
    group: cgroup.Cgroup | None = None
    landlock_error: str = ""  # why the second layer could not be applied, if it could not
    preload: tuple[str, ...] = ()  # what the sandbox's server imports for students (zygote)

    def start(self) -> None:
        from multiprocessing.connection import Connection

        z = zygote(self.confined, preload=self.preload)
        ours, theirs = socket.socketpair()
        if self.confined.cgroups:
            self.group = cgroup.Cgroup(self.limits.memory_bytes, self.limits.max_processes)
        nproc = 0 if self.group or os.geteuid() == 0 and not self.confined.sandboxed else (
            self.limits.max_processes + 16 * (os.cpu_count() or 1))  # counted per user
        config = {"scratch": z.scratch, "read": landlock_paths(),
                  "write": ["/dev", "/tmp"] if self.confined.sandboxed else ["/dev"],
                  "landlock": self.landlock, "memory_bytes": self.limits.memory_bytes,
                  "max_processes": nproc, "max_file_bytes": self.limits.max_file_bytes}
        try:
            self.pid, self.host_pid = z.fork(config, theirs.fileno())
        finally:
            theirs.close()
        if self.group is not None:
            self.group.add(self.host_pid)  # before any student code: it waits for a request
        self.conn = Connection(ours.detach())
        self._answers = select.poll()  # made once: no selector built for every request
        self._answers.register(self.conn.fileno(), select.POLLIN)
        if not self.deadline:
            self.deadline = time.monotonic() + self.limits.notebook_timeout
        files = [[name, bytes(data)] for name, data in sorted(self.files.items())]
        reply = self.request({"op": "files", "files": files}, timeout=60)
        report = reply.get("confinement")
        self.landlock_error = str(report.get("landlock_error", ""))[:300] if isinstance(
            report, dict) else ""

    @property
    def _ended(self) -> bool:
        """Known to have ended, without asking the zygote: never started, killed, or reaped."""
        return self.pid is None or self.exit_code is not None or self.killed

    @property
    def alive(self) -> bool:
        if self._ended:
            return False
        self.exit_code = zygote(self.confined).exit_code(self.pid)
        return self.exit_code is None

    def request(self, message: dict, timeout: float | None = None) -> dict:
        """Send one operation and wait for the answer, or raise WorkerDied."""
        from grader.sandbox import codec  # imports torch: only where students' code runs

        if self._ended:
            # (a process that died since its last answer shows up below, as the end of its
            # socket: no question to the zygote on every request)
            raise WorkerDied(self.killed_for or "the notebook's process is not running", "crash")
        timeout = self.limits.cell_timeout if timeout is None else timeout
        try:
            self.conn.send_bytes(codec.dumps(message))
            self._wait_for_answer(timeout)
            data = self.conn.recv_bytes(codec.MAX_MESSAGE)
        except (EOFError, BrokenPipeError, ConnectionResetError):
            raise WorkerDied(self._death(), self._death_kind()) from None
        except OSError as e:  # a reply over the size limit
            self.kill()
            raise WorkerDied(f"the notebook's process sent an oversized reply ({e})",
                             "flood") from None
        try:
            reply = codec.loads(data)
        except codec.CodecError as e:
            self.kill()
            raise WorkerDied(f"the notebook's process sent a malformed reply ({e})",
                             "crash") from None
        if not reply.get("ok"):
            err = reply.get("error") or {}
            raise RemoteError(str(err.get("ename", "Error"))[:100],
                              str(err.get("evalue", ""))[:2000],
                              [str(x)[:2000] for x in err.get("traceback", [])][:20])
        return reply

    def _wait_for_answer(self, timeout: float) -> None:
        """Wait until the answer is there, or kill the worker and raise WorkerDied.

        The cell's budget is CPU time of the student's process, so a busy machine (other
        submissions graded beside it) does not eat into it; a wall-clock cap of WALL_FACTOR
        times the budget still stops code that sleeps or blocks.
        """
        start = time.monotonic()
        if self._answered(min(QUICK, max(self.deadline - start, 0.0))):
            return  # most answers: no need to look at the process's CPU time
        cpu0 = self._cpu_seconds() - (time.monotonic() - start)  # at most QUICK was spent
        while not self._answered(min(0.5, max(self.deadline - time.monotonic(), 0.0))):
            wall = time.monotonic() - start
            why = None
            if time.monotonic() >= self.deadline:
                why = f"the notebook ran past its {self.limits.notebook_timeout:g} s limit"
            elif self._cpu_seconds() - cpu0 > timeout:
                why = f"it ran longer than the {timeout:g} s of CPU time allowed per cell"
            elif wall > timeout * WALL_FACTOR:  # one wording of the limit, as --cell-timeout's
                why = (f"it waited or slept longer than {timeout * WALL_FACTOR:g} s, "
                       f"{WALL_FACTOR} times the {timeout:g} s of CPU time allowed per cell")
            if why:
                self.kill()
                self.killed_for = f"stopped: {why}"
                raise WorkerDied(self.killed_for, "timeout")

    def _answered(self, seconds: float) -> bool:
        """Whether the answer (or the end of the connection) is there, waiting up to `seconds`.
        """
        return bool(self._answers.poll(math.ceil(seconds * 1000)))

    def _cpu_seconds(self) -> float:
        return cpu_seconds(self.host_pid)

    def _wait(self, seconds: float = 2.0) -> int | None:
        end = time.monotonic() + seconds
        while self.alive and time.monotonic() < end:
            time.sleep(0.02)
        return self.exit_code

    def _out_of_memory(self) -> bool:
        return self.group is not None and self.group.oom_kills() > 0

    def _death_kind(self) -> str:
        self._wait()
        return "memory" if self._out_of_memory() else "crash"

    def _death(self) -> str:
        code = self._wait()
        oom = self._out_of_memory()
        self.kill()
        if code is None:
            return "the notebook's process stopped answering"
        if oom:
            return (f"the notebook's process used more than its "
                    f"{self.limits.memory_bytes / 2**30:g} GiB of memory and was stopped")
        if code < 0:
            return f"the notebook's process was killed by {signal.Signals(-code).name}"
        return f"the notebook's process exited with status {code} (sys.exit or os._exit)"

    def kill(self) -> None:
        """Kill the student's process and everything it started (its cgroup, or its process
        group and descendants), then have the zygote sweep the sandbox clean."""
        if self.pid is None or self.killed:
            return
        pid = self.host_pid
        if self.group is not None:
            self.group.end()  # every process it started is in the group: no search needed
        else:
            others = descendants(pid) | session_members(pid)  # before they are orphaned
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            for other in others | descendants(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(other, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        self.killed = True
        z = zygote(self.confined)
        with contextlib.suppress(OSError, ValueError):
            z.sweep()
        if self.group is not None:
            self.group.remove()

    def close(self) -> None:
        self.kill()
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def cpu_seconds(pid: int, reaped: bool = False) -> float:
    """CPU time of a process (0 when gone); `reaped`: with that of the children it reaped."""
    fields = stat_fields(pid)
    if fields is None:
        return 0.0
    return sum(int(f) for f in fields[11:15 if reaped else 13]) / os.sysconf("SC_CLK_TCK")


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for p in _all_pids():
        st = stat(p)
        if st:
            children.setdefault(st[0], []).append(p)
    found, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def session_members(sid: int) -> set[int]:
    return {p for p in _all_pids() if (st := stat(p)) and st[1] == sid and p != sid}
