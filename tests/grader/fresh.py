"""Fresh interpreters for tests that must see a process start from nothing (each imports torch:
seconds), started all at once."""

from __future__ import annotations

import subprocess
import sys
import time


def interpreters_at_once(*codes: str, timeout: float | None = None) \
        -> list[subprocess.CompletedProcess]:
    """Run each code with `python -c` in a fresh interpreter, all started together; `timeout`
    seconds for them all. None is left running when this is interrupted or times out."""
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for code in codes]
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
