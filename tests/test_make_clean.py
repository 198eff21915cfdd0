"""`make clean` removes build/ but never a course: a folder with a gradebook.db, submitted/ or
autograded/ (grader/course.py) may hold a real class's grades and submissions, and the default
course, build/course, is under build/. Run on a scratch copy of the Makefile and a scratch build/,
never on the repository's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

MAKEFILE = Path(__file__).resolve().parent.parent / "Makefile"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make_clean(where: Path) -> str:
    shutil.copy(MAKEFILE, where / "Makefile")
    done = subprocess.run(["make", "-s", "clean"], cwd=where, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def write(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_clean_keeps_every_course_and_removes_the_rest(tmp_path):
    build = tmp_path / "build"
    outside = write(tmp_path / "outside" / "keep.txt")  # reached through a link in build/
    kept = [
        write(build / "course" / "gradebook.db"),                    # the default course
        write(build / "course" / "submitted" / "ann" / "a" / "a.ipynb"),
        write(build / "demo" / "course" / "autograded" / "bob" / "a" / "a.ipynb"),  # nested
        write(build / "tests" / "c2" / "submitted" / "cy" / "a" / "a.ipynb"),  # no gradebook
        write(build / "my course" / "gradebook.db"),                 # a space in its name
    ]
    (build / "course" / "source").symlink_to(tmp_path / "outside")
    removed = [
        write(build / "lectures" / "01.html"),
        write(build / "demo" / "reports" / "r.html"),
        write(build / "demo" / "grades.csv"),
        write(build / "tests" / "scratch" / "f"),
        write(build / ".student-wheel.lock"),
        write(build / "dist" / "x.whl"),
        write(build / "fresh-machine" / "root.tar"),
    ]
    (build / "link").symlink_to(tmp_path / "outside")
    (build / "demo" / "feedback").mkdir()

    said = make_clean(tmp_path)

    assert all(p.exists() for p in kept), [str(p) for p in kept if not p.exists()]
    assert not any(p.exists() for p in removed), [str(p) for p in removed if p.exists()]
    assert not (build / "link").is_symlink() and not (build / "demo" / "feedback").exists()
    assert (build / "course" / "source").is_symlink()
    assert outside.exists()  # a link is removed, never followed
    for course in ("build/course", "build/demo/course", "build/tests/c2", "build/my course"):
        assert f"kept {course}, a course:" in said, said
    assert "kept build/course, a course: gradebook.db submitted" in said
    assert sorted(p.name for p in build.iterdir()) == ["course", "demo", "my course", "tests"]
    assert sorted(p.name for p in (build / "demo").iterdir()) == ["course"]


def test_clean_removes_build_when_it_holds_no_course(tmp_path):
    write(tmp_path / "build" / "lectures" / "01.html")
    write(tmp_path / "build" / "demo" / "course" / "release" / "a" / "a.ipynb")  # released only
    assert "removed build/" in make_clean(tmp_path)
    assert not (tmp_path / "build").exists()


def test_clean_without_build_does_nothing(tmp_path):
    assert make_clean(tmp_path) == ""
