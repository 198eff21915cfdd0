"""Python's garbage collector is kept out of the grader's start-ups
(grader/startup/collector.py)."""

import gc
import subprocess
import sys

import pytest

from grader.startup.collector import paused


@pytest.fixture
def collector():
    # each test leaves the collector as it found it, and nothing of this process frozen
    was = gc.isenabled()
    yield
    gc.unfreeze()
    if was:
        gc.enable()
    else:
        gc.disable()


def test_paused_stops_the_collector_inside_and_freezes_what_was_made(collector):
    gc.enable()
    before = gc.get_freeze_count()
    with paused():
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]  # tracked containers
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(made)


def test_paused_resumes_after_an_error(collector):
    gc.enable()
    with pytest.raises(RuntimeError), paused():
        raise RuntimeError("an import failed")
    assert gc.isenabled()


def test_paused_leaves_a_collector_that_was_off_off(collector):
    gc.disable()
    before = gc.get_freeze_count()
    with paused():
        pass
    assert not gc.isenabled() and gc.get_freeze_count() == before


def test_the_grading_command_imports_without_a_full_collection(tmp_path):
    # nbgrader's imports, with the collector on, ran two full collections (0.13 s of CPU)
    (tmp_path / "submissions").mkdir()  # no student in it: an error after the imports
    probe = ("import gc\n"
             "from grader.cli import main\n"
             f"main(['--course', {str(tmp_path / 'course')!r}, 'autograde', 'soft_select', "
             f"'--submissions', {str(tmp_path / 'submissions')!r}])\n"
             "print(gc.isenabled(), gc.get_freeze_count(), gc.get_stats()[2]['collections'])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    enabled, frozen, full = done.stdout.split()[-3:]
    assert "no student folders in" in done.stderr  # it got as far as reading the folder
    assert enabled == "True" and int(frozen) > 50_000 and full == "0", done.stdout
