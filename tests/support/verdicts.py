"""What `grader check` and autograde each say of a class of submissions, and whether they agree:
shared by the catalogue (tests/catalogue/) and the machine-made mutants (tests/mutants/).

For `grader check`, the released notebook runs in one kernel per assignment: each student's
solution cells are run, then every visible test cell, as `python -m grader check` runs them in a
fresh kernel. A test with only visible code must get the same verdict from both; a test with a
hidden part fails in autograde wherever `grader check` fails it (the released code is part of
the graded code), and may fail only in autograde otherwise.
"""

from __future__ import annotations

import functools
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grader.course import KERNEL_ARGS, REPO, Course
from grader.demo.sample_class import Student, make_submission
from tests.support.notebooks import grade_id

SKIP = {"train", "test_training"}  # training runs: minutes of CPU, and not about one mistake


def is_test(cell):
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and meta.get("grade") and not meta.get("solution")


def failures(cell) -> str | None:
    errors = [f"{o.ename}: {o.evalue}" for o in cell.get("outputs", [])
              if o.output_type == "error"]
    return "\n".join(errors) or None


def failed_tests(course: Course, student: str, assignment: str) -> dict[str, str]:
    """{test grade_id: its error messages} from the student's autograded notebooks: the
    verdicts of an autograde run, as the gradebook counts them."""
    failed = {}
    for path in (course.autograded / student / assignment).glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            if is_test(cell) and failures(cell):
                failed[grade_id(cell)] = failures(cell)
    return failed


def checked(course: Course, assignment: str, students: list[Student], tmp: Path
            ) -> dict[str, dict[str, str]]:
    """{student: {visible test grade_id: failure message}}: `grader check`'s verdicts, every
    student's notebook run in turn in one kernel."""
    released_nb = course.release / assignment / f"{assignment}.ipynb"
    source_nb = course.source / assignment / f"{assignment}.ipynb"
    out = {}
    for student in students:
        nb = make_submission(source_nb, released_nb, student)
        nb.cells = [c for c in nb.cells if c.cell_type == "code" and grade_id(c) not in SKIP]
        out[student.id] = nb
    first = next(iter(out.values()))
    (tmp / "check").mkdir(parents=True, exist_ok=True)
    client = NotebookClient(first, timeout=120, kernel_name="python3", allow_errors=True,
                            extra_arguments=KERNEL_ARGS,
                            resources={"metadata": {"path": str(tmp / "check")}})
    verdicts = {}
    with client.setup_kernel():
        for student, nb in out.items():
            client.nb = nb
            for i, cell in enumerate(nb.cells):
                client.execute_cell(cell, i)
            verdicts[student] = {grade_id(c): failures(c) for c in nb.cells
                                 if is_test(c) and c.source.strip() and failures(c)}
    return verdicts


def disagreements(assignment: str, failed: dict[str, str], verdicts: dict[str, str]
                  ) -> list[str]:
    """Where autograde's failed tests ({grade_id: message}) and `grader check`'s disagree, each
    said in a line."""
    kinds = visible_tests(assignment)
    out = []
    for gid in sorted(set(kinds) - SKIP):
        if kinds[gid] == "visible":
            agree = (gid in failed) == (gid in verdicts)
        else:
            agree = gid in failed or gid not in verdicts
        if not agree:
            out.append(f"{gid} ({kinds[gid]}): autograde "
                       f"{'fails' if gid in failed else 'passes'} it, grader check "
                       f"{'fails' if gid in verdicts else 'passes'} it: "
                       f"{failed.get(gid) or verdicts.get(gid)}")
    return out


@functools.cache
def visible_tests(assignment) -> dict[str, str]:
    """{grade_id: 'visible' (no hidden part) or 'mixed'} of the tests with visible code."""
    nb = nbformat.read(REPO / "assignments" / assignment / f"{assignment}.ipynb", as_version=4)
    kinds = {}
    for cell in nb.cells:
        shown = _released(cell.source)
        if is_test(cell) and any(line.strip() and not line.strip().startswith("#")
                                 for line in shown.splitlines()):
            kinds[grade_id(cell)] = "visible" if shown == cell.source else "mixed"
    return kinds


def _released(source: str) -> str:
    """The source without its hidden-test blocks, as the released notebook shows it."""
    out, hidden = [], False
    for line in source.splitlines(keepends=True):
        if line.strip() == "### BEGIN HIDDEN TESTS":
            hidden = True
        elif line.strip() == "### END HIDDEN TESTS":
            hidden = False
        elif not hidden:
            out.append(line)
    return "".join(out) if "### BEGIN HIDDEN TESTS" in source else source
