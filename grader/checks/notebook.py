"""In a notebook, a failing check is shown as its message, not as a long traceback.

Importing `grader.checks` inside an IPython kernel (a student running their notebook in
JupyterLab) registers a handler for AssertionError: a `CheckFailure`, or an `assert` with a
message written at the top level of a test cell, is displayed as one red line,

    ✗ causal_mask(4) has shape (3, 3), expected (4, 4)

and the cell still fails (the kernel reports an error, "Run All" stops there, nbgrader sees the
error output with its name and message). An assertion raised inside the student's own function,
or one without a message, keeps IPython's full traceback: there the location is the useful part.
Outside IPython nothing is registered.
"""

from __future__ import annotations

import sys

from .compare import CheckFailure

RED, RESET = "\x1b[31m", "\x1b[0m"
MARK = "✗"


def _raised_at_top_level(tb) -> bool:
    """Whether the assertion was raised by the cell's own code (a test cell's `assert`)."""
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_name == "<module>"


def brief_failure(etype, evalue, tb) -> list[str] | None:
    """The lines to show for this failure, or None to keep the usual traceback."""
    message = str(evalue).strip()
    if not message:
        return None
    if not (issubclass(etype, CheckFailure) or _raised_at_top_level(tb)):
        return None
    first, *rest = message.splitlines()
    return [f"{RED}{MARK} {first}{RESET}", *(f"  {line}" for line in rest)]


def _handler(shell, etype, evalue, tb, tb_offset=None):
    stb = brief_failure(etype, evalue, tb)
    if stb is None:
        stb = shell.InteractiveTB.structured_traceback(etype, evalue, tb, tb_offset=tb_offset)
    shell._showtraceback(etype, evalue, stb)  # the kernel sends it as the cell's error output
    return stb


def show_failures_briefly() -> bool:
    """Register the handler in the running IPython shell, if there is one; True if registered."""
    ipython = sys.modules.get("IPython")  # never import IPython into a plain Python process
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return False
    current = getattr(shell, "custom_exceptions", ())
    if current and current != (AssertionError,):
        return False  # someone else's handler: leave it alone
    shell.set_custom_exc((AssertionError,), _handler)
    return True
