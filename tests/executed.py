"""The session's executed lectures (tests/conftest.py's `executed_lectures`): each lecture
executed once a test run, every one the run needs at the first request, several at a time."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

from lectures.toolkit.execute import LECTURES, execute_to, in_lanes

# share(name, build) -> build()'s value, built once per test run (tests/support/once.py)
Share = Callable[[str, Callable[[], object]], object]


class ExecutedLectures:
    """lecture path -> (executed notebook, seconds); each lecture runs at most once a session.

    The first call executes every lecture the session's tests will ask for (`wanted`), one per
    core at a time (`in_lanes`: each lecture holds PyTorch to one thread, so two of them on two
    cores take about as long each as one alone). A lecture that fails keeps failing for every
    test that asks for it (its error is raised again), and its copy in build/lectures/ is
    removed, so no later build reuses an old one. With `share` (tests/conftest.py passes
    tests/support/once.py's), the pytest-xdist workers of a run share one execution: the first
    to ask executes, the others read its notebooks.
    """

    def __init__(self, out: Path, wanted: list[Path] = (), counts: Counter | None = None,
                 seconds: dict | None = None, share: Share | None = None):
        self.out = out
        self.wanted = [Path(p).resolve() for p in wanted]
        self.counts = Counter() if counts is None else counts  # executions, by lecture name
        self.seconds = {} if seconds is None else seconds  # each execution's, by lecture name
        self.share = share or (lambda name, build: build())
        self._runs: dict[Path, tuple] = {}

    def __call__(self, path: Path):
        path = Path(path).resolve()
        if path not in self._runs:
            todo = [p for p in dict.fromkeys([path, *self.wanted]) if p not in self._runs]
            names = "\n".join(str(p) for p in sorted(todo)).encode()
            key = f"lectures-{hashlib.sha256(names).hexdigest()[:16]}"
            self._runs.update(self.share(key, partial(self._execute, todo)))
        run, error = self._runs[path]
        if error is not None:
            raise error
        return run

    def _execute(self, todo: list[Path]) -> dict[Path, tuple]:
        """{path: ((executed notebook, seconds), None) or (None, LectureFailed)}, every one of
        `todo` executed side by side; the errors are made plain so that the value pickles."""
        for p in todo:
            self.counts[p.stem] += 1
        runs = {}
        for p, (run, error) in in_lanes(partial(execute_to, out=self.out), todo).items():
            if error is not None:
                (self.out / p.name).unlink(missing_ok=True)
                error = LectureFailed(f"{p.name} failed: {type(error).__name__}: {error}")
            else:
                self.seconds[p.stem] = run[1]
            runs[p] = run, error
        return runs


class LectureFailed(RuntimeError):
    """A lecture's execution raised (the original error's type and text)."""


def lectures_wanted(items) -> list[Path]:
    """The lectures that the collected tests will execute: the one a test that uses
    `executed_lectures` is parametrized with (its `path`), every lecture for any other such
    test (the site build)."""
    every = sorted(LECTURES.glob("*.ipynb"))
    wanted: set[Path] = set()
    for item in items:
        if "executed_lectures" not in getattr(item, "fixturenames", ()):
            continue
        callspec = getattr(item, "callspec", None)
        path = callspec.params.get("path") if callspec else None
        lecture = Path(path).resolve() if isinstance(path, (str, Path)) else None
        wanted |= {lecture} if lecture in every else set(every)
    return sorted(wanted)
