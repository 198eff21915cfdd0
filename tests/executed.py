"""The session's executed lectures (tests/conftest.py's `executed_lectures`): each lecture
executed once a test run, every one the run needs at the first request, several at a time."""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path

from lectures.toolkit.execute import LECTURES, execute_to, in_lanes


class ExecutedLectures:
    """lecture path -> (executed notebook, seconds); each lecture runs at most once a session.

    The first call executes every lecture the session's tests will ask for (`wanted`), one per
    core at a time (`in_lanes`: each lecture holds PyTorch to one thread, so two of them on two
    cores take about as long each as one alone). A lecture that fails keeps failing for every
    test that asks for it (its error is raised again), and its copy in build/lectures/ is
    removed, so no later build reuses an old one.
    """

    def __init__(self, out: Path, wanted: list[Path] = (), counts: Counter | None = None,
                 seconds: dict | None = None):
        self.out = out
        self.wanted = [Path(p).resolve() for p in wanted]
        self.counts = Counter() if counts is None else counts  # executions, by lecture name
        self.seconds = {} if seconds is None else seconds  # each execution's, by lecture name
        self._runs: dict[Path, tuple] = {}

    def __call__(self, path: Path):
        path = Path(path).resolve()
        if path not in self._runs:
            todo = [p for p in dict.fromkeys([path, *self.wanted]) if p not in self._runs]
            for p in todo:
                self.counts[p.stem] += 1
            for p, (run, error) in in_lanes(partial(execute_to, out=self.out), todo).items():
                if error is not None:
                    (self.out / p.name).unlink(missing_ok=True)
                else:
                    self.seconds[p.stem] = run[1]
                self._runs[p] = run, error
        run, error = self._runs[path]
        if error is not None:
            raise error
        return run


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
