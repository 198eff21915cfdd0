"""Processes started all at once: commands (each `grader check` of a batch of notebooks), and
fresh interpreters for tests that must see a process start from nothing (each imports torch:
seconds)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def at_once(commands: list[list[str]], cwd: Path | None = None, timeout: float | None = None
            ) -> list[subprocess.CompletedProcess]:
    """Run each command, all started together, their output captured (text); `timeout` seconds
    for them all. None is left running when this is interrupted or times out."""
    procs = [subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for command in commands]
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        done = [proc.communicate(timeout=None if deadline is None
                                 else max(deadline - time.monotonic(), 0)) for proc in procs]
    except BaseException:
        for proc in procs:
            proc.kill()
            proc.communicate()
        raise
    return [subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
            for proc, (out, err) in zip(procs, done, strict=True)]


def interpreters_at_once(*codes: str, timeout: float | None = None) \
        -> list[subprocess.CompletedProcess]:
    """Run each code with `python -c` in a fresh interpreter, all started together; `timeout`
    seconds for them all. None is left running when this is interrupted or times out."""
    return at_once([[sys.executable, "-c", code] for code in codes], timeout=timeout)
