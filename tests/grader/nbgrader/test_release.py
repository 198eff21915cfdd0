"""Student versions have no solutions, no hidden tests, no mark schemes, and the stated points."""

import re

import nbformat
import pytest

from grader.course import REPO, Course
from grader.nbgrader.release import release

ASSIGNMENTS = sorted(p.parent.name for p in (REPO / "assignments").glob("*/*.ipynb"))


def source(assignment):
    return nbformat.read(REPO / "assignments" / assignment / f"{assignment}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    course = Course(tmp_path_factory.mktemp("release") / "course", source=REPO / "assignments")
    return {a: nbformat.read(release(course, a) / f"{a}.ipynb", as_version=4)
            for a in ASSIGNMENTS}


def solution_lines(nb) -> set[str]:
    """Substantial lines inside the source's solution regions and written model answers."""
    lines = set()
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("solution"):
            lines |= {s.strip() for s in cell.source.splitlines() if len(s.strip()) > 30}
            continue
        inside = False
        for line in cell.source.splitlines():
            s = line.strip()
            if s == "### BEGIN SOLUTION":
                inside = True
            elif s == "### END SOLUTION":
                inside = False
            elif inside and len(s) > 12 and not s.startswith("#"):
                lines.add(s)
    return lines


def test_there_are_seven_assignments():
    assert ASSIGNMENTS == ["by_hand", "efficient_attention", "rnn_attention", "self_attention",
                           "soft_select", "tiny_gpt", "transformer"]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_has_no_solutions_or_hidden_tests(assignment, released):
    text = "\n".join(c.source for c in released[assignment].cells)
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "Mark scheme" not in text
    assert "import solutions" not in text and "from solutions" not in text
    expected = solution_lines(source(assignment))
    assert expected, "the source should have solution regions"
    given = {line.strip() for c in source(assignment).cells  # the instructor's own code, which
             if not c.metadata.get("nbgrader", {}).get("solution")  # a solution may repeat
             for line in c.source.splitlines()}
    leaked = [line for line in expected - given if line in text]
    assert not leaked, f"solution text in the release: {leaked}"
    stubs = [c for c in released[assignment].cells
             if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    assert stubs and all("raise NotImplementedError()" in c.source for c in stubs)
    assert all(not c.get("outputs") for c in released[assignment].cells if c.cell_type == "code")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_points_add_up_to_the_stated_totals(assignment, released):
    def points(nb):
        return {c.metadata["nbgrader"]["grade_id"]: (c.cell_type, c.metadata["nbgrader"]["points"])
                for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}

    src = source(assignment)
    assert points(released[assignment]) == points(src)
    intro = src.cells[0].source
    auto = re.search(r"autograded\s+(?:tests|answers)\s+are\s+worth\s+\*\*(\d+) points\*\*", intro)
    written = re.search(r"written\s+answers?\s+(?:is|are)\s+worth\s+\*\*(\d+) points\*\*", intro)
    assert auto and written, "the introduction should state the autograded and written totals"
    by_kind = {"code": 0, "markdown": 0}
    for kind, p in points(src).values():
        by_kind[kind] += p
    assert by_kind["code"] == int(auto.group(1))
    assert by_kind["markdown"] == int(written.group(1)) > 0


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebooks_are_stored_without_outputs(assignment):
    nb = source(assignment)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
