"""`python -m grader check` tells the truth (issue 49, section 2), through the CLI, on notebooks
saved *with* their outputs, as students save them.

One released soft_select notebook is answered from the source, executed once and saved with its
outputs (every stored output says PASS); then it is broken in one way per notebook: an answer
cell that loops forever, a syntax error, errors left in answer cells, a blank written answer,
an answer that kills its own kernel.
The blank release is executed and saved too (its stored outputs all fail), and a copy answered
afterwards without running it again must pass. All checks run at once, one kernel each.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from grader.course import REPO
from grader.demo.sample_class import make_submission
from tests.support.classes import released_class, sample_students
from tests.support.notebooks import cell_of as _cell
from tests.support.processes import at_once

pytestmark = pytest.mark.slow
SOURCE = REPO / "assignments" / "soft_select" / "soft_select.ipynb"
LOOP_LIMIT = 45  # seconds: --timeout for the looping notebook (importing torch stays below it)


def _executed(nb, folder: Path):
    NotebookClient(nb, timeout=300, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def _broken(nb, **edits):
    """A copy of `nb` (outputs kept) with {grade_id: function of the source} applied."""
    nb = nbformat.from_dict(nb)
    for grade_id, edit in edits.items():
        _cell(nb, grade_id).source = edit(_cell(nb, grade_id).source)
    return nb


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """{notebook: `python -m grader check` of it}, each notebook saved with outputs."""
    tmp = tmp_path_factory.mktemp("check")
    released = released_class(tmp, "soft_select").released
    [alice] = sample_students("soft_select", "alice")
    answered = _executed(make_submission(SOURCE, released, alice), tmp)
    blank = _executed(nbformat.read(released, as_version=4), tmp)
    stored = [o.get("ename") for c in answered.cells for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert stored == [], f"the answered notebook should run cleanly once: {stored}"

    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in answered.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    notebooks = {
        "answered": answered,
        "loop": _broken(answered, soft_select=lambda s: "while True:\n    pass\n" + s),
        "syntax": _broken(answered, softmax=lambda s: s.replace("torch.exp(z)", "torch.exp(z")),
        "errors": _broken(answered,
                          hard_select=lambda s: s + "\n\nprint(debug_value)\n",
                          soft_select=lambda s: s.replace("keys.transpose(-2, -1)", "keys"),
                          written_temperature=lambda s: ""),
        "killed": _broken(answered, softmax=lambda s: "import os, signal\n"
                          "os.kill(os.getpid(), signal.SIGKILL)\n" + s),
        "blank": blank,
        "answered_after": _broken(blank, **{g: (lambda s, t=t: t) for g, t in solutions.items()}),
    }
    commands = []
    for name, nb in notebooks.items():
        nbformat.write(nb, tmp / f"{name}.ipynb")
        extra = ["--timeout", str(LOOP_LIMIT)] if name == "loop" else []
        commands.append([sys.executable, "-m", "grader", "check", f"{name}.ipynb", *extra])
    return dict(zip(notebooks, at_once(commands, cwd=tmp, timeout=600), strict=True))


def _verdicts(stdout: str) -> dict[str, str]:
    return dict((name, mark) for mark, name in
                re.findall(r"^  (PASS|FAIL|NOT RUN)  (\w+) \(", stdout, re.M))


def _block(stdout: str, test: str) -> str:
    """A test's line and the message lines under it."""
    found = re.search(rf"^  \w[\w ]*  {test} \(.*?(?=^  \S|^\S)", stdout, re.M | re.S)
    assert found, f"{test} not in:\n{stdout}"
    return found.group(0)


def test_no_kernel_noise(checked):
    for name, done in checked.items():
        assert done.stderr == "", f"{name}: {done.stderr}"


def test_a_clean_notebook_passes(checked):
    done = checked["answered"]
    assert done.returncode == 0, done.stdout
    assert set(_verdicts(done.stdout).values()) == {"PASS"} and len(_verdicts(done.stdout)) == 5
    assert "5 of 5 visible tests pass." in done.stdout
    assert "not answered yet" not in done.stdout and "Written answers" not in done.stdout


def test_stored_passes_are_not_counted_when_a_cell_is_stopped(checked):
    done = checked["loop"]
    assert done.returncode == 1
    verdicts = _verdicts(done.stdout)
    # before the looping cell: run and passed; after it: not run (their stored outputs passed)
    assert verdicts == {"test_hard_select": "PASS", "test_softmax_small": "PASS",
                        "test_softmax_large": "PASS", "test_soft_select_temperature": "NOT RUN",
                        "test_attention_pooling": "NOT RUN"}, done.stdout
    assert "3 of 5 visible tests pass (2 not run)" in done.stdout
    assert re.search(r"STOPPED  answer cell soft_select \(cell \d+, starting \"while True:\"\)\n"
                     rf" +stopped after {LOOP_LIMIT} s, the check's limit per cell, while "
                     r"running line [12] of this cell", done.stdout), done.stdout
    assert "not run: the check stopped at answer cell soft_select" in \
        _block(done.stdout, "test_attention_pooling")


def test_a_syntax_error_is_reported_as_one(checked):
    done = checked["syntax"]
    assert done.returncode == 1
    assert re.search(r"ERROR  answer cell softmax \(cell \d+, starting \"def softmax\(x, "
                     r"dim=-1\):\"\)\n +SyntaxError at line 4: ", done.stdout), done.stdout
    block = _block(done.stdout, "test_softmax_small")
    assert "NameError: name 'softmax' is not defined" in block
    assert "answer cell softmax" in block and "has a SyntaxError at line 4; tests after it " \
        "fail because its names (softmax among them) were never defined" in block
    assert _verdicts(done.stdout)["test_hard_select"] == "PASS"  # before it: unaffected


def test_errors_in_answer_cells_name_kind_cell_and_line(checked):
    done = checked["errors"]
    assert done.returncode == 1
    # an error after the function's definition: every test passes, the error is still listed
    assert re.search(r"ERROR  answer cell hard_select \(cell \d+, starting \"def hard_select"
                     r"\(query, keys, values\):\"\)\n +NameError: name 'debug_value' is not "
                     r"defined\n +\(at line \d+ of this cell\)", done.stdout), done.stdout
    assert _verdicts(done.stdout)["test_hard_select"] == "PASS"
    # a shape error raised inside the answer: the test's line and the answer's line
    block = _block(done.stdout, "test_soft_select_temperature")
    assert "FAIL" in block and "RuntimeError: mat1 and mat2 shapes cannot be multiplied" in block
    assert re.search(r"\(at line \d+ of this test, inside answer cell soft_select \(cell \d+, "
                     r"starting \"def soft_select.*\"\) at line \d+\)", block), block
    # no NameError was traced to the debug line: soft_select is not defined in that cell
    assert "were never defined" not in done.stdout
    assert re.search(r"Written answers not given yet.*\n  written answer written_temperature "
                     r"\(cell \d+, below \"\*\*Question 2", done.stdout), done.stdout
    for answered in ("written_stable_softmax", "experiment_bandwidth"):
        assert answered not in done.stdout  # answered: not listed


def test_a_blank_notebook_says_not_answered_yet(checked):
    done = checked["blank"]
    assert done.returncode == 1
    assert set(_verdicts(done.stdout).values()) == {"FAIL"}
    for test, answer in (("test_hard_select", "hard_select"), ("test_softmax_large", "softmax"),
                         ("test_attention_pooling", "attention_pooling")):
        assert f"not answered yet: answer cell {answer} (" in _block(done.stdout, test)
    assert "NotImplementedError: \n" not in done.stdout + "\n"
    for answer in ("hard_select", "softmax", "soft_select", "attention_pooling"):
        assert re.search(rf"not answered yet:  answer cell {answer} \(", done.stdout), answer
    assert re.search(r"Written answers not given yet.*\n  written answer written_stable_softmax "
                     r"\(cell \d+, below \"\*\*Question 1.*\n  written answer "
                     r"written_temperature .*\n  written answer experiment_bandwidth \(cell \d+, "
                     r"below \"\*\*Question \(3 points\)\.\*\* The bandwidth", done.stdout), \
        done.stdout


def test_stored_failures_are_not_counted_either(checked):
    # answered after the blank release was run and saved: its stored outputs all fail
    done = checked["answered_after"]
    assert done.returncode == 0, done.stdout
    assert "5 of 5 visible tests pass." in done.stdout


def test_a_dead_kernel_is_reported_by_its_exit_status(checked):
    done = checked["killed"]
    assert done.returncode == 1
    assert re.search(r"STOPPED  answer cell softmax \(cell \d+, starting \"import os, signal\"\)"
                     r"\n +the kernel \(the Python process running your notebook\) was killed by "
                     r"SIGKILL", done.stdout), done.stdout
    verdicts = _verdicts(done.stdout)
    assert verdicts["test_hard_select"] == "PASS"
    assert {verdicts[t] for t in ("test_softmax_small", "test_softmax_large",
                                  "test_attention_pooling")} == {"NOT RUN"}
