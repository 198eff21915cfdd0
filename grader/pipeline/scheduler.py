"""Stage 2's scheduling: the prepared submissions handed to a pool (grader.pipeline.pools), each
one's end reported as an explicit value, whatever goes wrong with the pool on the way.

A submission whose execution raised is the grader's failure, not the student's: it is tried
again, up to MAX_ATTEMPTS times. A pool that breaks is replaced by a new one, up to MAX_ATTEMPTS
times. A submission that runs past every limit (`bound`) has wedged its pool process: the
watchdog ends that pool and reports the submission stuck; the others start again on a new pool,
their interrupted attempt not counted. Recording the results is the caller's
(grader.pipeline.autograde): this module imports nothing from it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from grader.submission import Failed, Finished, Outcome, Stuck, Task

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # executions of one submission, and restarts of a broken pool, before giving up
WATCHDOG_POLL = 5.0  # seconds between two looks at the running submissions


class Pool(Protocol):
    """What the scheduler needs of a pool (grader.pipeline.pools: LocalPool, InProcess,
    DaskPool)."""

    def submit(self, task: Task) -> Any: ...

    def done(self, futures: set, timeout: float | None = None) -> set: ...

    def kill(self) -> None: ...

    def close(self) -> None: ...


class Scheduler:
    """Runs prepared tasks on a pool: submit, retry, restart, watchdog."""

    def __init__(self, make_pool: Callable[[], Pool], bound: float, poll: float = WATCHDOG_POLL,
                 max_attempts: int = MAX_ATTEMPTS, clock: Callable[[], float] = time.monotonic):
        """make_pool: a new pool, to replace one that broke or was killed; bound: the seconds a
        submission may run before the watchdog stops it; poll: the seconds between two looks
        at the running submissions; max_attempts: the executions of one submission, and the
        restarts of the pool, before they count as the grader's failure."""
        self.make_pool = make_pool
        self.bound = bound
        self.poll = poll
        self.max_attempts = max_attempts
        self.clock = clock

    def run(self, tasks: dict[str, Task], pool: Pool) -> Iterator[Outcome]:
        """Execute every task ({student: task}) on `pool`, and on the pools that replace it;
        yields one Outcome per student as each ends. The pool in use is closed when the
        iteration ends, however it ends (done, closed early, or an exception)."""
        batch = _Batch(self, tasks, pool)
        try:
            yield from batch.outcomes()
        finally:
            batch.pool.close()


class _Batch:
    """One run of the scheduler: the pool in use, the submissions running on it and since when,
    each student's attempts, and how often the pool was restarted."""

    def __init__(self, scheduler: Scheduler, tasks: dict[str, Task], pool: Pool):
        self.scheduler = scheduler
        self.tasks = tasks
        self.pool = pool
        self.attempts = dict.fromkeys(tasks, 0)
        self.running: dict[Any, str] = {}  # future -> student
        self.since: dict[str, float] = {}  # when each running submission was handed to the pool
        self.restarts = 0  # of the pool, after it broke

    def outcomes(self) -> Iterator[Outcome]:
        for student in self.tasks:
            self.submit(student)
        while self.running:
            try:
                finished = self.pool.done(set(self.running), timeout=self.scheduler.poll)
            except Exception as e:  # the pool itself broke: start a new one, resubmit
                yield from self.restart(e)
                continue
            stuck = self.stuck()
            if stuck and not finished:
                yield from self.stop(stuck)
                continue
            for future in finished:
                yield from self.collect(future)

    def submit(self, student: str) -> None:
        """Hand the student's task to the pool: one more attempt."""
        self.attempts[student] += 1
        self.running[self.pool.submit(self.tasks[student])] = student
        self.since[student] = self.scheduler.clock()

    def stuck(self) -> list[str]:
        """The running students whose submission has run past the bound."""
        bound, clock = self.scheduler.bound, self.scheduler.clock
        return [s for s in self.running.values() if clock() - self.since[s] > bound]

    def take_running(self) -> list[str]:
        """The students running on the pool, in the order they were handed to it; none runs
        any longer."""
        waiting, self.running = list(self.running.values()), {}
        return waiting

    def collect(self, future) -> Iterator[Outcome]:
        """The end of one execution: its result, or a retry, or the grader's failure."""
        student = self.running.pop(future)
        try:
            result = future.result()
        except Exception as e:  # infrastructure, not the student: try again
            if not self.retry(student, e):
                yield Failed(student, _machinery_failed(self.attempts[student], e))
        else:
            yield Finished(student, result)

    def retry(self, student: str, e: Exception) -> bool:
        """Submit the student again after their execution raised `e`, if attempts are left;
        whether it was submitted."""
        if self.attempts[student] >= self.scheduler.max_attempts:
            return False
        log.info("  %s: %s (%s); retrying", student, type(e).__name__, e)
        try:
            self.submit(student)
        except Exception:  # the failure is reported with the execution's error
            return False
        return True

    def restart(self, e: Exception) -> Iterator[Outcome]:
        """The pool broke (`e`): a new one, every running submission handed to it again; after
        MAX_ATTEMPTS restarts, every running submission is the grader's failure."""
        self.restarts += 1
        waiting = self.take_running()
        if self.restarts > self.scheduler.max_attempts:  # it keeps breaking: reported
            for student in waiting:
                yield Failed(student, _pool_failed(self.restarts, e))
            return
        log.info("  worker pool failed (%s: %s); restarting it", type(e).__name__, e)
        with contextlib.suppress(Exception):
            self.pool.close()
        self.pool = self.scheduler.make_pool()
        for student in waiting:
            self.submit(student)

    def stop(self, stuck: list[str]) -> Iterator[Outcome]:
        """The watchdog: a submission that outlives every limit has wedged its pool process.
        End the pool (sandboxes die with it), report the stuck ones, and hand the others to a
        new pool, their interrupted attempt not counted (it was not their fault)."""
        bound = self.scheduler.bound
        log.info("  watchdog: %s still running after %.0f s; stopping them and restarting the "
                 "pool", ", ".join(stuck), bound)
        self.pool.kill()
        self.pool = self.scheduler.make_pool()
        for student in self.take_running():
            if student in stuck:
                yield Stuck(student, bound)
            else:
                self.attempts[student] -= 1
                self.submit(student)


def _machinery_failed(attempts: int, e: Exception) -> str:
    return (f"not graded: the grading machinery failed {attempts} times "
            f"({type(e).__name__}: {e}); this is not the student's fault, run "
            "autograde again to retry")


def _pool_failed(restarts: int, e: Exception) -> str:
    return (f"not graded: the worker pool failed {restarts} times "
            f"({type(e).__name__}: {e}); this is not the student's fault, run "
            "autograde again to retry")
