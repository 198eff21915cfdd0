"""What ships, and that it works once installed.

The student wheel (`make student-wheel`) must hold no line of a reference solution (the lines
between `### BEGIN SOLUTION` and `### END SOLUTION`, and written model answers, in
assignments/*/*.ipynb) and none of the answer-key values the demo's sample class is built from.
The instructor wheel, installed non-editable into a fresh virtual environment (as a Dask worker
gets it with `pip install .`), must grade: editable installs hide a package that setuptools
leaves out, such as a folder without __init__.py.
"""

from __future__ import annotations

import json
import keyword
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.course import REPO, Course
from grader.demo.sample_class import SAMPLE_CLASSES, SOFT_SELECT_CLASS
from grader.nbgrader.release import release
from tests.support.classes import write_class
from tests.support.venvs import borrowing_venv

pytestmark = pytest.mark.slow
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def _trivial(line: str) -> bool:
    """Blank lines, brackets, `else:`, `return x`: lines any Python file may hold. A line is
    trivial when its names and numbers, keywords aside, add up to fewer than 4 characters."""
    words = [w for w in re.findall(r"\w+", line) if w not in keyword.kwlist]
    return sum(map(len, words)) < 4


def solution_lines() -> set[str]:
    """Every non-trivial line of every solution region and written model answer."""
    lines = set()
    for path in sorted(REPO.glob("assignments/*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "markdown" and meta.get("solution"):
                lines.update(cell.source.splitlines())  # a written model answer, all of it
                continue
            inside = False
            for line in cell.source.splitlines():
                if line.strip() in MARKERS:
                    inside = line.strip() == MARKERS[0]
                elif inside:
                    lines.add(line)
    return {line.strip() for line in lines if not _trivial(line)}


def answer_key() -> set[str]:
    """The correct text each sample student's edit replaces (by_hand: whole answers), with
    whitespace collapsed, line by line and whole."""
    values = set()
    for students in SAMPLE_CLASSES.values():
        for student in students:
            for edit in student.edits:
                values.add(" ".join(edit.old.split()))
                values.update(line.strip() for line in edit.old.splitlines())
    return {v for v in values if not _trivial(v)}


def leaks(wheel: Path) -> dict[str, list[str]]:
    """{secret line: files of the wheel that contain it}."""
    with zipfile.ZipFile(wheel) as z:
        texts = {n: z.read(n).decode("utf-8", "replace") for n in z.namelist()}
    flat = {n: " ".join(t.split()) for n, t in texts.items()}
    found: dict[str, list[str]] = {}
    for secret in solution_lines() | answer_key():
        where = [n for n in texts if secret in texts[n] or " ".join(secret.split()) in flat[n]]
        if where:
            found[secret] = where
    return found


def _build(tmp: Path, edition: str, parts: list[str]) -> Path:
    """A wheel built from a copy of `parts` of the repository (never in-tree: a stale build/
    folder would slip old files in)."""
    src = tmp / f"src-{edition}"
    src.mkdir()
    for part in parts:
        copy = shutil.copytree if (REPO / part).is_dir() else shutil.copy
        copy(REPO / part, src / part)
    env = {**os.environ, "COURSE_EDITION": edition}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
                   check=True, capture_output=True, env=env)
    return next((tmp / "dist").glob("attention_course-*.whl"))


@pytest.fixture(scope="module")
def student_wheel() -> Path:
    subprocess.run(["make", "-s", "student-wheel"], cwd=REPO, check=True, capture_output=True)
    wheels = sorted((REPO / "build" / "dist").glob("attention_course-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


@pytest.fixture(scope="module")
def instructor_wheel(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("instructor"), "instructor",
                  ["pyproject.toml", "setup.py", "README.md", "grader", "solutions"])


def test_the_secrets_are_found_at_all():
    """The search below has something to look for: solutions of every assignment, and the
    by-hand answer matrices."""
    lines = solution_lines()
    assert len(lines) > 100
    assert "Q = [[2, 1, 1, 0], [0, 2, 0, 1], [1, 0, 1, 0]]" in lines
    assert "[[1, 4, 1, 2], [5, 4, 3, 1], [0, 2, 0, 1], [2, 1, 1, 0]]" in answer_key()
    assert not any(_trivial(s) for s in lines)
    assert _trivial("return x") and _trivial("])") and not _trivial("return weights")


def test_the_search_finds_a_leak(instructor_wheel):
    """The instructor wheel ships `solutions` and `grader.demo`: the same search must find
    both the answer key and solution lines in it (or it proves nothing about the student's)."""
    found = leaks(instructor_wheel)
    assert any(any(n.startswith("grader/demo/") for n in where) for where in found.values())
    assert any(any(n.startswith("solutions/") for n in where) for where in found.values())


def test_student_wheel_holds_no_solution_and_no_answer_key(student_wheel):
    names = zipfile.ZipFile(student_wheel).namelist()
    assert not any(n.startswith(("solutions/", "grader/demo/")) for n in names), names
    assert "grader/sandbox/__init__.py" in names and "grader/intake.py" in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    found = leaks(student_wheel)
    assert found == {}, "solution lines or answer-key values in the student wheel:\n" + \
        "\n".join(f"  {s!r} in {', '.join(w)}" for s, w in sorted(found.items()))


def _fresh_venv(tmp: Path) -> Path:
    """A venv borrowing .venv's third-party packages (not its .pth files: the editable
    install of the course is hooked in there), with the course installed non-editable."""
    python, _ = borrowing_venv(tmp / "venv")
    src = tmp / "src"
    src.mkdir()
    for part in ("pyproject.toml", "setup.py", "README.md", "grader", "solutions"):
        copy = shutil.copytree if (REPO / part).is_dir() else shutil.copy
        copy(REPO / part, src / part, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                         if copy is shutil.copytree else {}))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-build-isolation", "--no-index", str(src)],
                   check=True, capture_output=True, text=True, cwd=tmp)
    return python


GRADE = """
import json, sys
from pathlib import Path
import grader, grader.sandbox, solutions
from grader.pipeline.autograde import autograde, progress_to
from grader.course import Course
course = Course(Path(sys.argv[1]), source=Path(sys.argv[2]))
with progress_to(print):
    results = autograde(course, "soft_select", Path(sys.argv[3]), workers=2)
print("RESULT " + json.dumps({"grader": grader.__file__, "sandbox": grader.sandbox.__file__,
      "solutions": solutions.__file__,
      "rows": {r.student: [r.auto_score, r.auto_max, r.error] for r in results}}))
"""


@pytest.fixture
def install_dir(tmp_path):
    """Where the fresh venv goes: not under /tmp, which the sandbox replaces by a private
    tmpfs in the student's process (an interpreter there could not start the worker)."""
    folder = REPO / "build" / "test-install" / f"{os.getpid()}-{tmp_path.name}"
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_non_editable_install_grades(tmp_path, install_dir):
    python = _fresh_venv(install_dir)
    source = tmp_path / "assignments"
    shutil.copytree(REPO / "assignments" / "soft_select", source / "soft_select")
    work = tmp_path / "work"  # outside the repository: nothing imports from the source tree
    work.mkdir()
    released = release(Course(tmp_path / "scratch", source=source), "soft_select") / \
        "soft_select.ipynb"
    # alice (full), bob (blank), carol (partial)
    write_class(tmp_path / "submissions", released, SOFT_SELECT_CLASS[:3],
                source / "soft_select" / "soft_select.ipynb")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # .venv/bin last: third-party commands (alembic) that the borrowed packages bring
    env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", ""),
                                   str(Path(sys.executable).parent)])
    run = subprocess.run([str(python), "-c", GRADE, str(tmp_path / "course"), str(source),
                          str(tmp_path / "submissions")], cwd=work, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = json.loads(run.stdout.split("RESULT ", 1)[1])
    installed = str(python.parent.parent)
    for module in ("grader", "sandbox", "solutions"):
        assert out[module].startswith(installed), f"{module} imported from {out[module]}"
    rows = out["rows"]
    assert rows["alice"] == [15, 15, None], f"{rows}\n{run.stdout[-3000:]}"
    assert rows["bob"] == [0, 15, None]
    assert rows["carol"][2] is None and 0 < rows["carol"][0] < 15
