"""What the sandbox reads of and sets on processes through the kernel: /proc/PID/stat and
prctl(2); and from them, a process's CPU time, its descendants and the members of its session
(the processes a student's code started, to be ended with it), and the pid on this machine of a
process inside the sandbox. A leaf: the grader's side (launcher.py, session.py), the server
(zygote.py) and the student's process (worker.py) all use it."""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path

PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36


def prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (None: no such process)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def stat(pid: int):
    fields = stat_fields(pid)
    return None if fields is None else (int(fields[1]), int(fields[3]))  # parent, session id


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


def host_pid(ancestor: int, ns_pid: int) -> int:
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
