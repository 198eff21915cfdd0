"""Session-wide fixtures: the repository, and the two expensive things several suites need.

- `executed_lectures`: each lecture executed once per test run (with the figure checks) into
  build/lectures/, exactly as `make lectures` writes it; every lecture the run needs is executed
  at the first request, one per core at a time (tests/executed.py). tests/lectures checks each
  run (budget, errors) and tests/site builds the site from these copies, which book/build.py
  reuses because they are newer than the notebooks and their code.
- `sample_classes`: `make demo` once per test run (every assignment's sample class released,
  autograded, with feedback, reports and grades.csv), in a folder of its own below build/tests/
  (JupyterLab, in the browser tests, can only serve what is below the repository). Tests read it;
  a test that needs to change a course's state grades a class of its own and says why.

The summary at the end of a run counts lecture executions and autograde calls in this process
(the site build's executions are read from its output), so a regression to executing or
grading twice shows up in every run.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.executed import ExecutedLectures, lectures_wanted
from tests.support.once import once, run_folder
from tests.support.schedule import longest_first, scheduler, unit

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")

EXECUTED_LECTURES = REPO / "build" / "lectures"  # shared with `make lectures` and `make site`


@pytest.fixture(scope="session", autouse=True)
def preflight_cache(tmp_path_factory):
    """The grader's preflight verdicts (grader/pipeline/preflight.py) cached for this run alone,
    shared by its workers and by the commands the tests start: a run never trusts a verdict of
    an earlier one, and each source is checked once a run."""
    os.environ["GRADER_PREFLIGHT_CACHE"] = str(run_folder(tmp_path_factory) / "preflight")


@dataclass
class RunLog:
    """How often this test process executed each lecture and autograded each assignment."""

    lectures: Counter = field(default_factory=Counter)  # by the fixture
    lecture_seconds: dict = field(default_factory=dict)  # each execution's, by the fixture
    site_lectures: Counter = field(default_factory=Counter)  # by book/build.py (not reused)
    gradings: Counter = field(default_factory=Counter)  # autograde() calls, by assignment
    notebooks: Counter = field(default_factory=Counter)  # submissions executed, by assignment
    made: list = field(default_factory=list)  # folders below build/ to remove when the run ends
    # {unit of work (tests/support/schedule.py): [worker, first test's start, last one's end]}
    units: dict = field(default_factory=dict)

    def add(self, other: dict) -> None:
        """Count in what a pytest-xdist worker did (its `as_dict()`)."""
        for name in ("lectures", "site_lectures", "gradings", "notebooks"):
            getattr(self, name).update(other[name])
        self.lecture_seconds.update(other["lecture_seconds"])
        self.made += other["made"]
        self.units.update(other["units"])

    def as_dict(self) -> dict:
        return {name: dict(getattr(self, name)) for name in ("lectures", "lecture_seconds",
                "site_lectures", "gradings", "notebooks", "units")} | {"made": list(self.made)}

    def ran(self, nodeid: str, worker: str, start: float, end: float) -> None:
        """A test of `unit(nodeid)` ran on `worker` from `start` to `end` (time.time())."""
        name = unit(nodeid)[1]
        _, first, _ = self.units.get(name, (worker, start, end))
        self.units[name] = [worker, min(first, start), end]

    def timeline(self, longer_than: float = 30) -> list[str]:
        """Each worker's units of over `longer_than` seconds, in seconds from the run's start."""
        if not self.units:
            return []
        start = min(first for _, first, _ in self.units.values())
        lines = []
        for worker in sorted({w for w, _, _ in self.units.values()}):
            mine = sorted((first, last, name) for name, (w, first, last) in self.units.items()
                          if w == worker)
            busy = sum(last - first for first, last, _ in mine)
            shown = ", ".join(f"{name} {first - start:.0f}-{last - start:.0f}"
                              for first, last, name in mine if last - first > longer_than)
            lines.append(f"{worker}: busy {busy:.0f} s, ended at {mine[-1][1] - start:.0f} s; "
                         f"units over {longer_than:.0f} s: {shown or 'none'}")
        return lines

    def summary(self) -> list[str]:
        def show(counter):
            return ", ".join(f"{k} x{n}" for k, n in sorted(counter.items())) or "none"

        lines = [f"lectures executed: {sum(self.lectures.values())} ({show(self.lectures)})"]
        if self.lecture_seconds:
            lines.append("seconds each (side by side, one per core): " + ", ".join(
                f"{k} {s:.0f}" for k, s in sorted(self.lecture_seconds.items())))
        if self.site_lectures:
            lines.append(f"lectures executed again by the site build: {show(self.site_lectures)}")
        lines.append(f"autograde runs in this process: {sum(self.gradings.values())} "
                     f"({show(self.gradings)}); submissions executed: "
                     f"{sum(self.notebooks.values())}")
        return lines + self.timeline()


RUNS = RunLog()


def _count_autograde():
    """Count autograde() calls (a pass-through wrapper; installed before any test imports it)."""
    import functools

    import grader.pipeline.autograde

    inner = grader.pipeline.autograde.autograde

    @functools.wraps(inner)
    def autograde(course, assignment, *args, **kwargs):
        results = inner(course, assignment, *args, **kwargs)
        RUNS.gradings[assignment] += 1
        RUNS.notebooks[assignment] += sum(not r.skipped and not r.error for r in results)
        return results

    grader.pipeline.autograde.autograde = autograde


_count_autograde()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item):
    """Time each unit of work on its worker, for the summary's timeline."""
    start = time.time()
    yield
    RUNS.ran(item.nodeid, os.environ.get("PYTEST_XDIST_WORKER", "main"), start, time.time())


def pytest_collection_modifyitems(items):
    longest_first(items)  # tests/support/schedule.py


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test`'s workers take whole families and files (tests/support/schedule.py)."""
    return scheduler(config, log)


def pytest_sessionfinish(session):
    """A pytest-xdist worker hands its counts to the controlling process; the process that
    runs last (the controller, or the only one) removes what the run made below build/."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["run_log"] = RUNS.as_dict()
        return
    for folder in RUNS.made:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist: a worker finished; count what it did."""
    done = getattr(node, "workeroutput", {}).get("run_log")
    if done:
        RUNS.add(done)


def pytest_terminal_summary(terminalreporter):
    terminalreporter.section("lectures executed and classes graded")
    for line in RUNS.summary():
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def venv_python() -> str:
    return sys.executable


@pytest.fixture(scope="session")
def run_log() -> RunLog:
    return RUNS


@pytest.fixture(scope="session")
def shared(tmp_path_factory):
    """shared(name, build) -> build()'s value, built once per run by whichever pytest-xdist
    worker asks first and read back from disk by every other (tests/support/once.py)."""
    folder = run_folder(tmp_path_factory)
    return lambda name, build: once(name, build, folder)


@pytest.fixture(scope="session")
def executed_lectures(request, shared) -> ExecutedLectures:
    return ExecutedLectures(EXECUTED_LECTURES, lectures_wanted(request.session.items),
                            RUNS.lectures, RUNS.lecture_seconds, share=shared)


@dataclass
class SampleClasses:
    """The output of one `make demo` run: build/demo/'s layout, in `out`."""

    out: Path  # course/, submissions/, feedback/, reports/, grades.csv
    rows: dict  # {assignment: {student id: grader.submission.Result}}
    log: list[str]  # what the demo said (its progress lines included)

    @property
    def course(self):
        from grader.course import Course

        return Course(self.out / "course")


def _grade_sample_classes() -> tuple[Path, dict, list[str]]:
    from grader.demo.run import run_demo

    parent = REPO / "build" / "tests"
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="demo-", dir=parent))  # one per run: runs may overlap
    RUNS.made.append(str(work))  # removed when the whole run ends (pytest_sessionfinish)
    log: list[str] = []
    rows = run_demo(work / "demo", say=log.append)
    return work / "demo", {a: {s.id: r for s, r in table} for a, table in rows.items()}, log


@pytest.fixture(scope="session")
def sample_classes(shared) -> SampleClasses:
    """Every assignment's sample class, graded once a run by `make demo`'s own code."""
    return SampleClasses(*shared("sample-classes", _grade_sample_classes))
