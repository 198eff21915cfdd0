"""Starting, talking to and cleaning up a student's process.

Processes are forked from a server that has already imported torch and IPython, so a submission
costs a fork, not a fresh interpreter (start-up is paid once per grading run). Every wait has a
deadline; a process that dies, hangs or floods is killed with its whole process group.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.sandbox import codec


class Zygote:
    """The grader's handle on zygote.py: one per grading process, started on first use."""

    def __init__(self):
        self.sock, theirs = socket.socketpair()
        self.proc = subprocess.Popen([sys.executable, "-m", "grader.sandbox.zygote",
                                      str(theirs.fileno())], pass_fds=[theirs.fileno()],
                                     stdin=subprocess.DEVNULL)
        theirs.close()
        self.lock = threading.Lock()
        self.reader = self.sock.makefile("rb")
        if json.loads(self.reader.readline() or b"{}").get("ready") is not True:
            raise RuntimeError("the grader's worker server did not start")

    def _ask(self, request: dict, fds=()) -> dict:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
            return json.loads(self.reader.readline())

    def fork(self, config: dict, fd: int) -> int:
        return self._ask({"op": "fork", "config": config}, [fd])["pid"]

    def exit_code(self, pid: int) -> int | None:
        return self._ask({"op": "status", "pid": pid})["code"]

    def stop(self) -> None:
        self.reader.close()
        self.sock.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


_zygote: Zygote | None = None


def zygote() -> Zygote:
    global _zygote
    if _zygote is None or _zygote.proc.poll() is not None:
        _zygote = Zygote()
        atexit.register(_zygote.stop)
    return _zygote


WALL_FACTOR = 3  # wall-clock cap of a cell, in multiples of its CPU-time budget


@dataclass
class Limits:
    cell_timeout: float = 120.0  # CPU seconds one cell (or one call from a test) may take
    notebook_timeout: float = 900.0  # seconds for the whole notebook
    memory_bytes: int = 6 * 2**30  # address space of the student's process
    max_processes: int = 64  # processes the student's code may start (when enforceable)
    max_file_bytes: int = 256 * 2**20  # largest file the student's code may write


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


def python_paths() -> list[str]:
    """Folders the student's process must read to import Python packages."""
    import grader

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(grader.__file__).parent)}
    paths |= {p for p in sys.path if p and "site-packages" in p}
    return sorted(paths | {"/usr", "/lib", "/lib64", "/etc", "/proc", "/sys", "/opt"})


@dataclass
class Session:
    """One student's process for one notebook."""

    scratch: Path
    limits: Limits = field(default_factory=Limits)
    landlock: bool = True
    deadline: float = 0.0  # time.monotonic() by which the whole notebook must be done
    pid: int | None = None
    exit_code: int | None = None
    killed: bool = False  # by us: whatever its state, it is finished
    conn: object = None
    killed_for: str | None = None

    def start(self) -> None:
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        config = {"scratch": str(self.scratch), "read": python_paths(),
                  "write": ["/dev", "/dev/shm"], "landlock": self.landlock,
                  "memory_bytes": self.limits.memory_bytes,
                  "max_processes": self.limits.max_processes if os.geteuid() != 0 else 0,
                  "max_file_bytes": self.limits.max_file_bytes}
        try:
            self.pid = zygote().fork(config, theirs.fileno())
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        if not self.deadline:
            self.deadline = time.monotonic() + self.limits.notebook_timeout

    @property
    def alive(self) -> bool:
        if self.pid is None or self.exit_code is not None or self.killed:
            return False
        self.exit_code = zygote().exit_code(self.pid)
        return self.exit_code is None

    def request(self, message: dict, timeout: float | None = None) -> dict:
        """Send one operation and wait for the answer, or raise WorkerDied."""
        if not self.alive:
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
        cpu0, start = self._cpu_seconds(), time.monotonic()
        while not self.conn.poll(min(0.5, max(self.deadline - time.monotonic(), 0.0))):
            wall = time.monotonic() - start
            why = None
            if time.monotonic() >= self.deadline:
                why = f"the notebook ran past its {self.limits.notebook_timeout:g} s limit"
            elif self._cpu_seconds() - cpu0 > timeout:
                why = f"it ran longer than the {timeout:g} s of CPU time allowed per cell"
            elif wall > timeout * WALL_FACTOR:
                why = (f"it ran longer than {timeout * WALL_FACTOR:g} s (waiting or sleeping; "
                       f"{timeout:g} s allowed per cell)")
            if why:
                self.kill()
                self.killed_for = f"stopped: {why}"
                raise WorkerDied(self.killed_for, "timeout")

    def _cpu_seconds(self) -> float:
        try:
            text = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return 0.0
        fields = text[text.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _wait(self, seconds: float = 2.0) -> int | None:
        end = time.monotonic() + seconds
        while self.alive and time.monotonic() < end:
            time.sleep(0.02)
        return self.exit_code

    def _death_kind(self) -> str:
        code = self._wait()
        return "memory" if code == -signal.SIGKILL else "crash"  # SIGKILL: the OOM killer

    def _death(self) -> str:
        code = self._wait()
        self.kill()
        if code is None:
            return "the notebook's process stopped answering"
        if code < 0:
            name = signal.Signals(-code).name
            hint = (" (out of memory?)" if -code in (signal.SIGKILL, signal.SIGSEGV,
                                                    signal.SIGBUS) else "")
            return f"the notebook's process was killed by {name}{hint}"
        return f"the notebook's process exited with status {code} (sys.exit or os._exit?)"

    def kill(self) -> None:
        """Kill the student's process, its process group and anything it started."""
        if self.pid is None:
            return
        pid = self.pid
        others = descendants(pid) | session_members(pid)  # before they are orphaned
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        for other in others | descendants(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(other, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        self.killed = True

    def close(self) -> None:
        self.kill()
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _stat(pid: int):
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[3])  # parent pid, session id


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for p in _all_pids():
        st = _stat(p)
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
    return {p for p in _all_pids() if (st := _stat(p)) and st[1] == sid and p != sid}
