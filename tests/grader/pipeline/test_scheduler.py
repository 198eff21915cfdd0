"""The scheduler on a fake pool (no processes): retries, a broken pool replaced, the watchdog,
and every pool closed however the run ends."""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from dataclasses import dataclass

import pytest

from grader.pipeline.scheduler import MAX_ATTEMPTS, WATCHDOG_POLL, Scheduler
from grader.submission import Failed, Finished, Stuck

BOUND = 100.0  # seconds a submission may run before the watchdog stops it
ALL = "all"  # a poll that finds every running submission finished


@dataclass
class FakeTask:
    student: str


@dataclass(frozen=True)
class Wait:
    """A poll after which the clock reads `until`, that finds `finishing` finished (none by
    default)."""

    until: float
    finishing: frozenset[str] = frozenset()


class FakeFuture:
    """One submission of a student: the n-th of theirs, which raises `error` if one is given."""

    def __init__(self, student: str, attempt: int, error: Exception | None):
        self.student, self.attempt, self.error = student, attempt, error

    def result(self) -> dict:
        if self.error is not None:
            raise self.error
        return {"student": self.student, "attempt": self.attempt}


def first(n: int, student: str) -> set[tuple[str, int]]:
    """The student's first n submissions."""
    return {(student, i) for i in range(1, n + 1)}


class World:
    """What the fake pools share: the script of the polls (a set of students that finish, ALL,
    a Wait, or an exception the pool raises; ALL once the script is done), the submissions
    whose execution raises and those the pool refuses (each a student and their n-th
    submission, counted over every pool), the clock, and every pool the scheduler made."""

    def __init__(self, polls=(), raising: set[tuple[str, int]] = frozenset(),
                 refused: set[tuple[str, int]] = frozenset()):
        self.polls = list(polls)
        self.raising = raising
        self.refused = refused
        self.now = 0.0
        self.submissions: Counter[str] = Counter()
        self.timeouts: list[float | None] = []
        self.pools: list[FakePool] = []

    def clock(self) -> float:
        return self.now

    def make_pool(self) -> FakePool:
        pool = FakePool(self)
        self.pools.append(pool)
        return pool


class FakePool:
    """Records what it is asked; its futures end as the world's script says."""

    def __init__(self, world: World, close_raises: bool = False):
        self.world, self.close_raises = world, close_raises
        self.events: list[str] = []

    def submit(self, task: FakeTask) -> FakeFuture:
        world, student = self.world, task.student
        n = world.submissions[student] + 1
        if (student, n) in world.refused:
            raise OSError("the pool takes nothing more")
        world.submissions[student] = n
        self.events.append(f"submit {student}")
        error = ConnectionError("worker lost") if (student, n) in world.raising else None
        return FakeFuture(student, n, error)

    def done(self, futures: set, timeout: float | None = None) -> set:
        self.world.timeouts.append(timeout)
        step = self.world.polls.pop(0) if self.world.polls else ALL
        if isinstance(step, Exception):
            raise step
        if isinstance(step, Wait):
            self.world.now = step.until
            step = step.finishing
        return {f for f in futures if step == ALL or f.student in step}

    def close(self) -> None:
        self.events.append("close")
        if self.close_raises:
            raise RuntimeError("cannot close a broken pool")

    def kill(self) -> None:
        self.events.append("kill")

    @property
    def closed(self) -> int:
        return self.events.count("close")


def scheduler(world: World, max_attempts: int = MAX_ATTEMPTS) -> Scheduler:
    return Scheduler(world.make_pool, BOUND, poll=WATCHDOG_POLL, max_attempts=max_attempts,
                     clock=world.clock)


def tasks(*students: str) -> dict[str, FakeTask]:
    return {s: FakeTask(s) for s in students}


def run(world: World, students=("ann", "bob", "cy"), pool: FakePool | None = None,
        **kwargs) -> dict:
    """{student: their outcome}, each student's outcome yielded once."""
    pool = pool or FakePool(world)
    outcomes = list(scheduler(world, **kwargs).run(tasks(*students), pool))
    by_student = {o.student: o for o in outcomes}
    assert len(by_student) == len(outcomes) == len(students), outcomes
    world.pools.insert(0, pool)  # the first pool, made by the caller
    return by_student


def lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "grader.pipeline.scheduler" and r.levelno == logging.INFO]


@pytest.fixture(autouse=True)
def _info(caplog):
    caplog.set_level(logging.INFO, logger="grader.pipeline.scheduler")


def machinery_failed(times: int, error: str) -> str:
    return (f"not graded: the grading machinery failed {times} times ({error}); this is not the "
            "student's fault, run autograde again to retry")


def pool_failed(times: int, error: str) -> str:
    return (f"not graded: the worker pool failed {times} times ({error}); this is not the "
            "student's fault, run autograde again to retry")


def test_every_task_finishes_in_one_go(caplog):
    world = World()
    outcomes = run(world)
    assert outcomes == {s: Finished(s, {"student": s, "attempt": 1}) for s in ("ann", "bob", "cy")}
    [pool] = world.pools  # no other pool made
    assert pool.events == ["submit ann", "submit bob", "submit cy", "close"]
    assert world.timeouts == [WATCHDOG_POLL]
    assert lines(caplog) == []


def test_a_task_whose_execution_raises_is_retried_then_finishes(caplog):
    world = World(polls=[{"bob"}], raising=first(1, "bob"))
    outcomes = run(world)
    assert outcomes["bob"] == Finished("bob", {"student": "bob", "attempt": 2})
    assert outcomes["ann"] == Finished("ann", {"student": "ann", "attempt": 1})
    assert world.submissions == {"ann": 1, "bob": 2, "cy": 1}
    assert lines(caplog) == ["  bob: ConnectionError (worker lost); retrying"]
    assert len(world.pools) == 1 and world.pools[0].closed == 1


def test_a_task_that_raises_every_attempt_fails_as_infrastructure(caplog):
    world = World(raising=first(99, "bob"))
    outcomes = run(world)
    assert outcomes["bob"] == Failed("bob", machinery_failed(
        MAX_ATTEMPTS, "ConnectionError: worker lost"))
    assert world.submissions["bob"] == MAX_ATTEMPTS
    assert outcomes["cy"] == Finished("cy", {"student": "cy", "attempt": 1})
    assert lines(caplog) == ["  bob: ConnectionError (worker lost); retrying"] * (MAX_ATTEMPTS - 1)


def test_max_attempts_is_the_schedulers_own():
    world = World(raising=first(99, "bob"))
    outcomes = run(world, max_attempts=5)
    assert outcomes["bob"] == Failed("bob", machinery_failed(5, "ConnectionError: worker lost"))
    assert world.submissions["bob"] == 5


def test_a_retry_the_pool_refuses_fails_as_infrastructure(caplog):
    """The failure reported is the execution's, counting the refused submission."""
    world = World(raising=first(1, "bob"), refused={("bob", 2)})
    outcomes = run(world)
    assert outcomes["bob"] == Failed("bob", machinery_failed(2, "ConnectionError: worker lost"))
    assert world.submissions["bob"] == 1
    assert lines(caplog) == ["  bob: ConnectionError (worker lost); retrying"]


def test_a_broken_pool_is_replaced_and_the_run_finishes(caplog):
    world = World(polls=[{"ann"}, BrokenPipeError("pool broke")])
    first = FakePool(world, close_raises=True)  # a failure to close it changes nothing
    outcomes = run(world, pool=first)
    assert outcomes["ann"] == Finished("ann", {"student": "ann", "attempt": 1})
    assert outcomes["bob"] == Finished("bob", {"student": "bob", "attempt": 2})
    assert outcomes["cy"] == Finished("cy", {"student": "cy", "attempt": 2})
    first_, second = world.pools
    assert first_ is first
    assert first.events == ["submit ann", "submit bob", "submit cy", "close"]
    assert second.events == ["submit bob", "submit cy", "close"]
    assert lines(caplog) == ["  worker pool failed (BrokenPipeError: pool broke); restarting it"]


def test_a_resubmission_after_a_restart_is_an_attempt():
    world = World(polls=[RuntimeError("pool broke")], raising=first(99, "ann"))
    outcomes = run(world, students=("ann",))
    # The restart's submission counted: one attempt fewer for the retries.
    assert outcomes["ann"] == Failed("ann", machinery_failed(
        MAX_ATTEMPTS, "ConnectionError: worker lost"))
    assert world.submissions["ann"] == MAX_ATTEMPTS


def test_a_pool_that_keeps_breaking_fails_every_waiting_task(caplog):
    broken = [RuntimeError("pool broke")] * (MAX_ATTEMPTS + 1)
    world = World(polls=[{"ann"}, *broken])
    outcomes = run(world)
    assert outcomes["ann"] == Finished("ann", {"student": "ann", "attempt": 1})
    for student in ("bob", "cy"):
        assert outcomes[student] == Failed(student, pool_failed(
            MAX_ATTEMPTS + 1, "RuntimeError: pool broke"))
    assert len(world.pools) == 1 + MAX_ATTEMPTS
    assert [p.closed for p in world.pools] == [1] * len(world.pools)
    assert world.pools[-1].events == ["submit bob", "submit cy", "close"]
    assert lines(caplog) == [
        "  worker pool failed (RuntimeError: pool broke); restarting it"] * MAX_ATTEMPTS


def test_the_watchdog_stops_a_stuck_task_and_resubmits_the_others(caplog):
    # cy's first attempt raises at t=50: its retry starts then, bob's attempt at t=0.
    world = World(polls=[Wait(50.0, frozenset({"cy"})), Wait(BOUND + 1)], raising=first(1, "cy"))
    outcomes = run(world, students=("bob", "cy"))
    assert outcomes["bob"] == Stuck("bob", BOUND)
    assert outcomes["cy"] == Finished("cy", {"student": "cy", "attempt": 3})
    first_pool, second = world.pools
    assert first_pool.events == ["submit bob", "submit cy", "submit cy", "kill"]
    assert second.events == ["submit cy", "close"]
    assert world.timeouts == [WATCHDOG_POLL] * 3
    assert lines(caplog) == [
        "  cy: ConnectionError (worker lost); retrying",
        "  watchdog: bob still running after 100 s; stopping them and restarting the pool"]


def test_an_attempt_the_watchdog_interrupts_does_not_count():
    """cy: attempt 1 raises, attempt 2 is interrupted (bob is stuck), the next one raises
    too and is still retried; counted, the interrupted attempt would have left none."""
    world = World(polls=[Wait(10.0, frozenset({"cy"})), Wait(BOUND + 1), {"cy"}],
                  raising={("cy", 1), ("cy", 3)})
    outcomes = run(world, students=("bob", "cy"))
    assert outcomes["bob"] == Stuck("bob", BOUND)
    assert outcomes["cy"] == Finished("cy", {"student": "cy", "attempt": 4})
    assert world.submissions["cy"] == MAX_ATTEMPTS + 1


def test_several_stuck_tasks_are_named_in_one_line(caplog):
    world = World(polls=[Wait(BOUND + 0.5)])
    outcomes = run(world)
    assert outcomes == {s: Stuck(s, BOUND) for s in ("ann", "bob", "cy")}
    first, second = world.pools
    assert first.events[-1] == "kill" and "close" not in first.events
    assert second.events == ["close"]
    assert lines(caplog) == ["  watchdog: ann, bob, cy still running after 100 s; stopping "
                             "them and restarting the pool"]


def test_the_watchdog_waits_while_other_tasks_finish():
    """A poll that finds a submission finished is no reason to stop the pool, even with one
    past the bound; the next poll that finds none is."""
    world = World(polls=[Wait(BOUND + 1, frozenset({"ann"})), Wait(BOUND + 2)])
    outcomes = run(world, students=("ann", "bob"))
    assert outcomes["ann"] == Finished("ann", {"student": "ann", "attempt": 1})
    assert outcomes["bob"] == Stuck("bob", BOUND)
    assert world.pools[0].events == ["submit ann", "submit bob", "kill"]
    assert world.pools[1].events == ["close"]


def test_a_task_within_the_bound_is_left_running():
    world = World(polls=[Wait(BOUND), Wait(BOUND)])  # exactly the bound: not past it
    outcomes = run(world, students=("ann",))
    assert outcomes["ann"] == Finished("ann", {"student": "ann", "attempt": 1})
    assert len(world.pools) == 1 and "kill" not in world.pools[0].events


def test_every_pool_is_closed_when_the_consumer_stops_early():
    world = World(polls=[RuntimeError("pool broke"), {"ann"}])
    first = FakePool(world)
    with contextlib.closing(scheduler(world).run(tasks("ann", "bob"), first)) as outcomes:
        assert next(outcomes) == Finished("ann", {"student": "ann", "attempt": 2})
    [second] = world.pools
    assert first.closed == 1 and second.closed == 1
    assert "submit bob" in second.events


def test_the_pool_is_closed_when_the_consumer_fails():
    world = World()
    pool = FakePool(world)
    with pytest.raises(KeyError), \
            contextlib.closing(scheduler(world).run(tasks("ann", "bob"), pool)) as outcomes:
        for _ in outcomes:
            raise KeyError("the consumer's own failure")
    assert pool.closed == 1 and world.pools == []


def test_every_pool_is_closed_when_an_exception_escapes():
    # The new pool refuses bob's resubmission: the error is the scheduler's caller's.
    world = World(polls=[RuntimeError("pool broke")], refused={("bob", 2)})
    first = FakePool(world)
    with pytest.raises(OSError, match="takes nothing more"):
        list(scheduler(world).run(tasks("ann", "bob"), first))
    [second] = world.pools
    assert first.closed == 1 and second.closed == 1


def test_the_first_pool_is_closed_when_the_first_submission_fails():
    world = World(refused={("ann", 1)})
    pool = FakePool(world)
    with pytest.raises(OSError):
        list(scheduler(world).run(tasks("ann"), pool))
    assert pool.events == ["close"] and world.pools == []
