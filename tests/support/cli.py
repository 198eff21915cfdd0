"""`python -m grader` as the instructor runs it, in a process of its own: `grader` with the words
typed (text, or bytes), `on_course` with `--course COURSE` first (bytes: what reached the
terminal, undecoded); what a run printed, and the control characters a student could have put
on the instructor's terminal."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from grader.course import REPO

# C0 but LF, DEL, C1, and the format characters that reorder or hide text (bidi embeddings,
# overrides and isolates, zero-width characters), line and paragraph separators.
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e"
                     "\u2066-\u2069]")


def grader(*args: str, cwd: Path = REPO, timeout: float = 600, text: bool = True,
           env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m grader ARGS...` in `cwd`, its output captured (text unless `text` is
    False); `env` None: this process's environment."""
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd,
                          capture_output=True, text=text, timeout=timeout, env=env)


def on_course(course_root: Path, *args: str, exchange: Path | None = None, timeout: float = 900,
              text: bool = False, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m grader --course COURSE [--exchange E] ARGS...` in the repository; stdout
    and stderr are bytes (what reached the terminal, undecoded) unless `text`."""
    options = ["--exchange", str(exchange)] if exchange else []
    return grader("--course", str(course_root), *options, *args, timeout=timeout, text=text,
                  env=env)


def terminal_problems(run: subprocess.CompletedProcess) -> list[str]:
    """What in a run's output would act on a terminal: bytes that are not UTF-8 (a lone
    surrogate cannot even be printed), control characters. Empty when it is all plain text."""
    problems = []
    for name in ("stdout", "stderr"):
        data = getattr(run, name)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            problems.append(f"{name} is not UTF-8: {e}")
            continue
        problems += [f"{name} line {text.count(chr(10), 0, m.start()) + 1}: {m.group()!r} in "
                     f"{text[max(0, m.start() - 40):m.end() + 40]!r}"
                     for m in CONTROL.finditer(text)]
    return problems


def output(run: subprocess.CompletedProcess) -> str:
    """stdout and stderr as text, for assertion messages and searches."""
    return (run.stdout + b"\n" + run.stderr).decode("utf-8", errors="backslashreplace")
