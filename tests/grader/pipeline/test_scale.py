"""Grading at scale: the same class graded one at a time, by a local process pool, on a real
Dask cluster (a scheduler and two workers on loopback) and with a PostgreSQL gradebook must give
identical grades; an unchanged submission is not graded twice.

The class is the demo's soft_select class, graded once a session by tests/conftest.py's
`sample_classes` (autograde's default: one process per core). The other gradings here each
exercise a way of grading, or need a course whose state they change; each says why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from nbgrader.api import MissingEntry

from grader.course import REPO, Course
from grader.pipeline.autograde import autograde, progress_to
from tests.support.servers import free_port, stop

pytestmark = pytest.mark.slow
ASSIGNMENT = "soft_select"
REQUIRED = os.environ.get("GRADER_REQUIRE_SERVICES") == "1"  # set by .ci/run


@pytest.fixture(scope="module")
def submissions(sample_classes) -> Path:
    """The demo's soft_select class (written by `make demo`'s code); never changed here."""
    return sample_classes.out / "submissions" / ASSIGNMENT


def grades(course: Course) -> dict:
    """{student: {test: points}} of ASSIGNMENT straight from the gradebook (students of other
    assignments in the same course have no submission of it)."""
    out = {}
    with course.gradebook() as gb:
        for student in gb.students:
            try:
                sub = gb.find_submission(ASSIGNMENT, student.id)
            except MissingEntry:
                continue
            out[student.id] = {g.name: g.score for nb in sub.notebooks for g in nb.grades}
    return out


@pytest.fixture(scope="module")
def sequential(submissions, tmp_path_factory) -> Course:
    # Graded again, one at a time in this process: the sequential path is the reference the
    # pool, the cluster and the gradebooks are compared with, and the rerun tests below change
    # this course's state (the shared demo course is only read).
    course = Course(tmp_path_factory.mktemp("seq") / "course")
    results = autograde(course, ASSIGNMENT, submissions, workers=1)
    assert not [r for r in results if r.error]
    return course


def demo_lines(sample_classes, assignment: str) -> list[str]:
    """What the demo said while it graded `assignment`."""
    lines, inside = [], False
    for line in sample_classes.log:
        if line.startswith("== "):
            inside = line == f"== {assignment}"
        elif inside:
            lines.append(line)
    return lines


def test_a_process_pool_gives_the_same_grades(sequential, submissions, sample_classes,
                                              tmp_path):
    # The demo graded the class on one process per core: with two or more cores that was a
    # process pool, whose grades are compared here; with one core the pool is run here.
    lines = demo_lines(sample_classes, ASSIGNMENT)
    pooled = [m for m in (re.search(r"on (\d+) process\(es\)", line) for line in lines)
              if m and int(m.group(1)) >= 2]
    if pooled:
        course = sample_classes.course
        results = list(sample_classes.rows[ASSIGNMENT].values())
    else:
        course = Course(tmp_path / "course")
        lines = []
        with progress_to(lines.append):
            results = autograde(course, ASSIGNMENT, submissions, workers=2)
        assert any("on 2 process(es)" in line for line in lines)
    assert not [r for r in results if r.error]
    assert grades(course) == grades(sequential)


def test_a_rerun_skips_unchanged_submissions_and_force_regrades(sequential, submissions):
    lines = []
    with progress_to(lines.append):
        again = autograde(sequential, ASSIGNMENT, submissions, workers=1)
    assert all(r.skipped for r in again), lines
    assert [r.auto_score for r in again] == [r.auto_score for r in again if r.skipped]
    # Graded again: --force must execute unchanged submissions, which is what is checked.
    forced = autograde(sequential, ASSIGNMENT, submissions,
                       workers=1, force=True)
    assert not any(r.skipped for r in forced)


def test_a_changed_submission_is_graded_again(sequential, submissions, tmp_path):
    changed = tmp_path / "subs"
    shutil.copytree(submissions, changed)
    nb = changed / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb.write_text(nb.read_text().replace("Write", "write"))
    # Only bob's changed notebook is executed again (the point of the test).
    results = {r.student: r for r in autograde(sequential, ASSIGNMENT, changed, workers=1)}
    assert not results["bob"].skipped
    assert results["alice"].skipped


@pytest.fixture(scope="module")
def dask_cluster():
    dask = Path(sys.executable).with_name("dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port",
                               str(port), "--no-dashboard"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    try:
        from distributed import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                client = Client(address, timeout="2s")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        for _ in range(2):
            procs.append(subprocess.Popen(
                [str(dask), "worker", address, "--nthreads", "1", "--no-nanny",
                 "--no-dashboard", "--host", "127.0.0.1"], cwd=REPO,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        client.wait_for_workers(2, timeout=120)
        workers = set(client.run(os.getpid).values())
        client.close()
        yield address, workers
    finally:
        stop(procs[::-1], 20)  # the workers, then the scheduler


def test_a_dask_cluster_gives_the_same_grades(sequential, submissions, dask_cluster,
                                              tmp_path):
    address, worker_pids = dask_cluster
    # Graded again, on the cluster: executing there is what is checked.
    course = Course(tmp_path / "course")
    results = autograde(course, ASSIGNMENT, submissions,
                        scheduler=address)
    assert not [r for r in results if r.error]
    ran_on = {int(r.executed_by.split(":")[1]) for r in results}
    assert ran_on <= worker_pids, f"executed by {ran_on}, the cluster's workers are {worker_pids}"
    assert len(ran_on) == 2, "both workers should have taken submissions"
    assert grades(course) == grades(sequential)


@pytest.fixture
def postgres_url():
    base = os.environ.get("GRADER_POSTGRES_URL")
    if not base:
        if REQUIRED:
            pytest.fail("GRADER_POSTGRES_URL is not set, but .ci/run requires the PostgreSQL test")
        pytest.skip("no PostgreSQL server: set GRADER_POSTGRES_URL (.ci/run starts one)")
    import psycopg

    name = f"grades_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield base.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_postgresql_gradebook_gives_the_same_grades(sequential, submissions, postgres_url,
                                                      tmp_path):
    # Graded again, into PostgreSQL: writing that gradebook is what is checked.
    course = Course(tmp_path / "course", db=postgres_url)
    results = autograde(course, ASSIGNMENT, submissions, workers=2)
    assert not [r for r in results if r.error]
    assert grades(course) == grades(sequential)
    assert not (tmp_path / "course" / "gradebook.db").exists(), "SQLite was used instead"


class FlakyPool:
    """A pool whose machinery fails: the first `failures` attempts of every student raise."""

    workers = 1

    def __init__(self, failures: int):
        from grader.pipeline.pools import InProcess

        self.inner, self.failures, self.attempts = InProcess(), failures, {}

    def submit(self, task):
        future = self.inner.submit(task)
        n = self.attempts[task.student] = self.attempts.get(task.student, 0) + 1
        future.fail = n <= self.failures
        return future

    def done(self, futures, timeout=None):
        future = next(iter(futures))
        if future.fail:
            future.set_exception(ConnectionError("worker lost"))
            return {future}
        return self.inner.done({future})

    def close(self):
        pass

    def kill(self):
        pass


def test_a_lost_worker_is_retried_not_a_zero(sequential, submissions, tmp_path, monkeypatch):
    pool = FlakyPool(failures=1)
    monkeypatch.setattr("grader.pipeline.pools.make_pool", lambda *args: pool)
    # Graded again, through a pool that loses every first attempt: the retries are checked.
    course = Course(tmp_path / "course")
    lines = []
    with progress_to(lines.append):
        results = autograde(course, ASSIGNMENT, submissions)
    assert not [r for r in results if r.error], lines
    assert set(pool.attempts.values()) == {2}
    assert grades(course) == grades(sequential)


def test_machinery_that_keeps_failing_is_reported_as_the_graders_fault(submissions, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setattr("grader.pipeline.pools.make_pool",
                        lambda *args: FlakyPool(failures=99))
    course = Course(tmp_path / "course")
    results = autograde(course, ASSIGNMENT, submissions)
    assert all(r.infrastructure and "not the student's fault" in r.error for r in results)
    monkeypatch.undo()  # the machinery works again
    # Graded again (nothing was executed above): a rerun must grade what the machinery failed.
    again = {r.student: r for r in autograde(course, ASSIGNMENT, submissions, workers=1)}
    assert not any(r.skipped or r.error for r in again.values()), "the rerun grades them"
