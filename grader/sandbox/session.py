"""One student's process for one notebook, and the grader's side of talking to it.

The process is forked from the sandbox's server (launcher.py, zygote.py), which lives in the
sandbox (namespaces.py) and has already imported torch and IPython, in a cgroup of its own
(cgroup.py) where the machine allows it. Every request has a deadline, in CPU time of the
student's process and in wall-clock time; a process that dies, hangs or floods is ended with
everything it started (proc.py finds them), and the sandbox is swept for the next student.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import socket
import time
from dataclasses import dataclass, field

from grader.sandbox import cgroup, namespaces, proc
from grader.sandbox.confinement import Confinement, confinement
from grader.sandbox.launcher import zygote
from grader.submission import Limits

WALL_FACTOR = 3  # wall-clock cap of a cell, in multiples of its CPU-time budget
QUICK = 0.05  # seconds an answer may take before the process's CPU time is watched


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
    """Folders the student's process may read (Landlock, the second layer): what Python needs,
    and the notebooks' data folders (namespaces.data_paths)."""
    system = [p for p in ("/usr", "/lib", "/lib64", "/etc", "/proc", "/dev", "/opt")
              if os.path.isdir(p)]
    return sorted(set(namespaces.readable_paths()) | set(system)
                  | set(namespaces.data_paths()))


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
        return proc.cpu_seconds(self.host_pid)

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
            others = proc.descendants(pid) | proc.session_members(pid)  # before they are orphaned
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            for other in others | proc.descendants(pid):
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
