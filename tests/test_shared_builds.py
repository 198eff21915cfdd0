"""What the pytest-xdist workers of one run share (tests/support/once.py): an expensive build is
made by the first worker that asks and read back by the others, a failed one is not tried
again; and what conftest.py tells the controller (tests/conftest.py's RunLog)."""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import RunLog
from tests.support.once import BuildFailed, once
from tests.support.schedule import FAMILIES, unit


def _slow_build(marks: Path) -> dict:
    with marks.open("a") as f:
        f.write("built\n")
    time.sleep(1.0)  # long enough for the other process to ask while this one builds
    return {"answer": 42}


def _ask(folder: str, marks: str, results) -> None:
    results.put(once("thing", lambda: _slow_build(Path(marks)), Path(folder)))


def test_two_processes_asking_at_once_get_one_build(tmp_path):
    marks = tmp_path / "marks"
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    workers = [spawn.Process(target=_ask, args=(str(tmp_path / "run"), str(marks), results))
               for _ in range(2)]
    for w in workers:
        w.start()
    got = [results.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(30)
    assert got == [{"answer": 42}] * 2
    assert marks.read_text() == "built\n"  # built once, read back once


def test_a_failed_build_is_raised_again_and_not_retried(tmp_path):
    calls = []

    def broken():
        calls.append(1)
        raise ValueError("the lectures' data is missing")

    for _ in range(2):
        with pytest.raises(BuildFailed, match="the lectures' data is missing"):
            once("broken", broken, tmp_path)
    assert calls == [1]
    assert once("other", lambda: "fine", tmp_path) == "fine"  # another name builds anew


def test_the_controller_counts_what_every_worker_did():
    controller, worker = RunLog(), RunLog()
    worker.lectures["03_rnn_attention"] += 1
    worker.gradings["tiny_gpt"] += 2
    worker.lecture_seconds["03_rnn_attention"] = 107.0
    worker.made.append("build/tests/demo-x")
    controller.gradings["tiny_gpt"] += 1
    controller.add(worker.as_dict())
    assert controller.lectures == Counter({"03_rnn_attention": 1})
    assert controller.gradings == Counter({"tiny_gpt": 3})
    assert controller.lecture_seconds == {"03_rnn_attention": 107.0}
    assert controller.made == ["build/tests/demo-x"]
    assert "lectures executed: 1 (03_rnn_attention x1)" in controller.summary()


def test_the_timeline_shows_each_workers_long_units():
    log = RunLog()
    log.ran("tests/hub/test_remove.py::test_a", "gw1", 100.0, 160.0)
    log.ran("tests/hub/test_servers.py::test_b", "gw1", 160.0, 250.0)  # the same family
    log.ran("tests/test_docs.py::test_c", "gw1", 250.0, 251.0)
    log.ran("tests/lectures/test_lectures.py::test_d", "gw0", 100.0, 500.0)
    other = RunLog()
    other.add(log.as_dict())
    assert other.timeline() == [
        "gw0: busy 400 s, ended at 400 s; units over 30 s: lectures 0-400",
        "gw1: busy 151 s, ended at 151 s; units over 30 s: hub 0-150",
    ]


def test_each_family_runs_whole_on_one_worker_the_longest_first():
    assert unit("tests/site/test_offline.py::test_x[a]") == (0, "lectures")
    assert unit("tests/lectures/test_lectures.py::test_y") == (0, "lectures")
    assert unit("tests/hub/test_remove.py::test_z") == (1, "hub")
    other = "tests/lectures/test_exercises.py::test_w"
    assert unit(other) == (len(FAMILIES), "tests/lectures/test_exercises.py")
