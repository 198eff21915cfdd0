"""Executing several notebooks at once (`in_lanes`), and the session's executed lectures
(tests/executed.py): every lecture the run needs, each once, the first request executing all."""

import os
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from lectures.toolkit.execute import LECTURES, in_lanes
from tests.executed import ExecutedLectures, lectures_wanted


def meet(path: Path) -> int:
    """Leave a mark beside `path` and wait for every other path's mark: only work that runs at
    the same time gets past this (a lane run one after another would time out)."""
    path.with_suffix(".here").touch()
    deadline = time.monotonic() + 60
    while len(list(path.parent.glob("*.here"))) < len(list(path.parent.glob("*.task"))):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path.name} waited alone")
        time.sleep(0.05)
    return os.getpid()


def fail_on_b(path: Path) -> str:
    if path.stem == "b":
        raise ValueError(f"{path.name} is broken")
    return path.stem.upper()


def tasks(folder: Path, *names: str) -> list[Path]:
    paths = [folder / f"{name}.task" for name in names]
    for p in paths:
        p.touch()
    return paths


@pytest.mark.slow  # spawns interpreters: seconds
def test_two_lanes_run_at_the_same_time_each_in_a_process_of_its_own(tmp_path):
    results = in_lanes(meet, tasks(tmp_path, "a", "b"), n=2)
    assert [error for _, error in results.values()] == [None, None]
    pids = {pid for pid, _ in results.values()}
    assert len(pids) == 2 and os.getpid() not in pids


def test_one_lane_runs_in_this_process(tmp_path):
    results = in_lanes(lambda p: os.getpid(), tasks(tmp_path, "a", "b"), n=1)
    assert [value for value, _ in results.values()] == [os.getpid()] * 2


@pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_a_failure_stops_nothing_else_and_is_handed_back(tmp_path, n):
    paths = tasks(tmp_path, "a", "b", "c")
    finished = []
    results = in_lanes(fail_on_b, paths, n=n, done=lambda p, v, e: finished.append(p.stem))
    assert list(results) == paths  # in the order asked, whatever order they finished in
    assert results[paths[0]] == ("A", None) and results[paths[2]] == ("C", None)
    value, error = results[paths[1]]
    assert value is None and isinstance(error, ValueError) and "b.task is broken" in str(error)
    assert sorted(finished) == ["a", "b", "c"]


def item(fixtures, path=None):
    return SimpleNamespace(fixturenames=fixtures,
                           callspec=SimpleNamespace(params={"path": path}) if path else None)


def test_the_session_wants_the_lectures_its_tests_ask_for():
    every = sorted(LECTURES.glob("*.ipynb"))
    one = item(["executed_lectures"], every[2])
    assert lectures_wanted([one, item(["tmp_path"])]) == [every[2]]
    assert lectures_wanted([one, item(["site_build", "executed_lectures"])]) == every
    assert lectures_wanted([item(["tmp_path"], every[0])]) == []


def notebook(folder: Path, name: str, source: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_the_first_request_executes_every_wanted_lecture_once(tmp_path):
    good = notebook(tmp_path, "good", "print('fine')")
    bad = notebook(tmp_path, "bad", "raise RuntimeError('a lecture that fails')")
    out = tmp_path / "out"
    out.mkdir()
    (out / "bad.ipynb").write_text("an old executed copy")
    lectures = ExecutedLectures(out, [good, bad])

    nb, seconds = lectures(good)
    assert nb.cells[0].outputs[0].text == "fine\n" and seconds > 0
    assert dict(lectures.counts) == {"good": 1, "bad": 1}  # both, at the first request
    for _ in range(2):  # a failure is raised again to every test that asks, not retried
        with pytest.raises(Exception, match="a lecture that fails"):
            lectures(bad)
    assert lectures(good)[0] is nb
    assert dict(lectures.counts) == {"good": 1, "bad": 1}
    assert (out / "good.ipynb").exists() and not (out / "bad.ipynb").exists()
