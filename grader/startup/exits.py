"""Ending a process of a grading run without tearing its interpreter down.

With torch loaded (and the compiler's modules a warm-up imports) the teardown costs CPU at
the end of every run (docs/performance.md). Three processes end this way: the sandbox's server
(grader.sandbox.zygote), the pool's fork server (an exit handler of grader.startup.warmed) and
the command itself (grader.cli.run, after every other exit handler).
"""

import contextlib
import os
import sys


def exit_now(code: int = 0) -> None:
    """Flush what was printed, then end the process with `code`. Nothing else is left to
    write: a server answers on its socket as it serves."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
