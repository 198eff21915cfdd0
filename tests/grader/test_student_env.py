"""The student edition: the grader's `check` works, the reference solutions are not there.

Builds the student wheel the documented way (`make student-wheel`), installs it into a fresh
virtual environment that borrows the third-party packages of .venv (but not the course itself),
and runs a released notebook's visible tests there.
"""

import os
import re
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.course import REPO
from grader.demo.sample_class import SELF_ATTENTION_CLASS, make_submission
from tests.support.venvs import borrowing_venv

pytestmark = pytest.mark.slow
SOURCE = REPO / "assignments" / "self_attention" / "self_attention.ipynb"


@pytest.fixture(scope="module")
def student_python(tmp_path_factory) -> Path:
    subprocess.run(["make", "-s", "student-wheel"], cwd=REPO, check=True,
                   capture_output=True, text=True)
    wheels = sorted((REPO / "build" / "dist").glob("attention_course-*.whl"))
    assert len(wheels) == 1
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert any(n.startswith("grader/checks/") for n in names)
    assert not any(n.startswith("solutions/") for n in names), "solutions leaked into the wheel"
    assert not any(n.startswith("grader/demo/") for n in names), "the answer key leaked"
    assert "grader/sandbox/__init__.py" in names, "the sandbox is missing from the wheel"

    python, site = borrowing_venv(tmp_path_factory.mktemp("student") / "venv")
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extractall(site)  # a pure-Python wheel installs by unpacking
    return python


def run(python, *args, cwd):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_solutions_cannot_be_imported_but_grader_can(student_python, tmp_path):
    probe = run(student_python, "-c", "import solutions", cwd=tmp_path)
    assert probe.returncode != 0 and "No module named 'solutions'" in probe.stderr
    probe = run(student_python, "-c", "import grader.demo.sample_class", cwd=tmp_path)
    assert probe.returncode != 0 and "No module named 'grader.demo'" in probe.stderr
    ok = run(student_python, "-c", "import grader.checks, torch, nbgrader; print('ok')",
             cwd=tmp_path)
    assert ok.stdout.strip() == "ok", ok.stderr


def test_released_notebook_checks_in_the_student_environment(
        student_python, self_attention_release, tmp_path):
    _, released = self_attention_release
    alice = next(s for s in SELF_ATTENTION_CLASS if s.id == "alice")
    carol = next(s for s in SELF_ATTENTION_CLASS if s.id == "carol")
    for student in (alice, carol):
        nbformat.write(make_submission(SOURCE, released, student), tmp_path / f"{student.id}.ipynb")

    done = run(student_python, "-m", "grader", "check", "alice.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = re.search(r"(\d+) of (\d+) visible tests pass", done.stdout)
    assert passed and passed.group(1) == passed.group(2) and int(passed.group(2)) >= 5
    assert "hidden, run when graded" in done.stdout
    assert "No module named" not in done.stdout

    buggy = run(student_python, "-m", "grader", "check", "carol.ipynb", cwd=tmp_path)
    assert buggy.returncode == 1
    assert "FAIL  test_sdpa_distribution" in buggy.stdout
    assert "wrong axis" in buggy.stdout


def test_check_explains_a_broken_file(student_python, tmp_path):
    (tmp_path / "broken.ipynb").write_text('{"cells": [')
    result = run(student_python, "-m", "grader", "check", "broken.ipynb", cwd=tmp_path)
    assert result.returncode == 2
    assert "broken.ipynb" in result.stderr and "not a readable notebook" in result.stderr
