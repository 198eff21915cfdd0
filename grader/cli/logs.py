"""A command's logging: the progress lines of grading on stdout, warnings and errors on stderr,
more or less of them as -v and --quiet ask."""

from __future__ import annotations

import logging
import sys


class _Stream(logging.StreamHandler):
    """A handler writing to sys.stdout or sys.stderr as they are when it writes (a caller may
    replace them, as the tests do, after the command configured its logging)."""

    def __init__(self, name: str):
        super().__init__()
        self.name_of_stream = name

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = getattr(sys, self.name_of_stream)
        super().emit(record)


class _Below(logging.Filter):
    """Records under a level (the progress lines, on stdout; the rest go to stderr)."""

    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < self.level


def configure_logging(talk: str | None) -> None:
    """The grader's loggers for a command: progress lines (the pipeline's INFO records) on
    stdout, warnings and errors on stderr; `verbose` adds every module's diagnostics (DEBUG),
    `quiet` leaves warnings and errors alone. Called again (the tests run commands in one
    process), it replaces its own handlers rather than adding more."""
    root = logging.getLogger("grader")
    for handler in [h for h in root.handlers if getattr(h, "grader_cli", False)]:
        root.removeHandler(handler)
    out, err = _Stream("stdout"), _Stream("stderr")
    out.addFilter(_Below(logging.WARNING))
    err.setLevel(logging.WARNING)
    for handler in (out, err):
        handler.grader_cli = True
        handler.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(handler)
    root.setLevel({"verbose": logging.DEBUG}.get(talk, logging.WARNING))
    progress = logging.getLogger("grader.pipeline")
    progress.setLevel({"verbose": logging.NOTSET, "quiet": logging.WARNING}.get(talk,
                                                                                 logging.INFO))
