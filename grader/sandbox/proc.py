"""What the sandbox reads of and sets on processes through the kernel: /proc/PID/stat and
prctl(2). A leaf: the grader's side (session.py), the server (zygote.py) and the student's
process (worker.py) all use it."""

from __future__ import annotations

import ctypes
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
