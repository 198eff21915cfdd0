"""The watchdog: a submission that wedges its pool process is recorded as stuck, the pool is
restarted, and every other student is graded."""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import pytest

import grader.pipeline.autograde as autograde_module
import grader.pipeline.pools as parallel
from grader.demo.sample_class import Student
from tests.support.classes import released_class

pytestmark = pytest.mark.slow
FULL = 15


class WedgingPool:
    """Runs submissions in threads; the one named `stuck` blocks until the pool is killed,
    as a pool process would whose semaphores a student drained."""

    workers = 2
    made: list[WedgingPool] = []

    def __init__(self):
        self.threads = ThreadPoolExecutor(2)
        self.released = threading.Event()
        self.killed = False
        WedgingPool.made.append(self)

    def submit(self, task):
        if task.student == "stuck":
            return self.threads.submit(self.released.wait)
        return self.threads.submit(parallel.execute, task)

    def done(self, futures, timeout=None):
        return wait(futures, timeout=timeout, return_when=FIRST_COMPLETED).done

    def close(self):
        self.released.set()
        self.threads.shutdown()

    def kill(self):
        self.killed = True
        self.released.set()
        self.threads.shutdown(wait=False)


def test_a_wedged_submission_is_recorded_and_the_rest_graded(tmp_path, monkeypatch):
    mine = released_class(tmp_path, "soft_select")
    course = mine.course
    mine.write_class(Student(name, "", "full") for name in ("ann", "stuck", "zoe"))
    WedgingPool.made.clear()
    monkeypatch.setattr(parallel, "make_pool", lambda *args: WedgingPool())
    monkeypatch.setattr(autograde_module, "WATCHDOG_POLL", 0.5)
    monkeypatch.setattr(autograde_module, "watchdog_seconds", lambda tasks, limits: 20.0)
    lines = []
    start = time.monotonic()
    with autograde_module.progress_to(lines.append):
        results = {r.student: r for r in autograde_module.autograde(
            course, "soft_select", tmp_path / "submissions", workers=2)}
    assert time.monotonic() - start < 600
    stuck = results["stuck"]
    assert stuck.error and "watchdog" in stuck.error, stuck.error
    assert not stuck.infrastructure
    assert "stuck" in {f["kind"] for f in stuck.flags}
    assert results["ann"].auto_score == FULL and results["zoe"].auto_score == FULL, lines
    assert WedgingPool.made[0].killed, "the wedged pool was not stopped"
    assert any("watchdog" in line for line in lines), lines


def test_the_watchdog_waits_as_long_as_each_notebook_may_run():
    """The bound is each notebook's own limit (an assignment's metadata may allow a notebook
    more than the default, and the sandbox lets it run that long), summed over the notebooks
    of the submission, plus slack: never a watchdog that stops a notebook its limits allow."""
    from grader.submission import Plan, Task

    def task(limits, notebooks=("a",)):
        return Task("x", "s", {n: "{}" for n in notebooks},
                    Plan(files={}, answers={}, limits=limits))

    from grader.submission import Limits

    slack, run = autograde_module.WATCHDOG_SLACK, Limits(notebook_timeout=600.0)
    long = {"s": task({"a": run.updated({"notebook_timeout": 3000.0})})}
    assert autograde_module.watchdog_seconds(long, run) == 3000 + slack
    two = {"s": task({"a": run, "b": run.updated({"notebook_timeout": 50.0})}, ("a", "b"))}
    assert autograde_module.watchdog_seconds(two, run) == 650 + slack
    unplanned = {"s": task({}, ("a", "b"))}  # no plan for a notebook: the run's limit
    assert autograde_module.watchdog_seconds(unplanned, Limits()) == 2 * 900 + slack
