"""The student version has no solutions, no hidden tests and the stated points."""

import re

import nbformat

from grader.course import REPO

SOURCE = REPO / "assignments" / "self_attention" / "self_attention.ipynb"


def solution_lines(nb) -> set[str]:
    """Substantial code lines inside the source's solution regions."""
    lines = set()
    for cell in nb.cells:
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


def test_release_has_no_solutions_or_hidden_tests(self_attention_release):
    _, released_path = self_attention_release
    source = nbformat.read(SOURCE, as_version=4)
    released = nbformat.read(released_path, as_version=4)
    text = "\n".join(c.source for c in released.cells)

    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "import solutions" not in text and "from solutions" not in text
    leaked = [line for line in solution_lines(source) if line in text]
    assert solution_lines(source), "the source should have solution regions"
    assert not leaked, f"solution code in the release: {leaked}"
    stubs = [c for c in released.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert stubs and all("raise NotImplementedError()" in c.source for c in stubs)
    assert all(not c.get("outputs") for c in released.cells if c.cell_type == "code")


def test_release_keeps_every_test_cell_and_points(self_attention_release):
    _, released_path = self_attention_release
    source = nbformat.read(SOURCE, as_version=4)
    released = nbformat.read(released_path, as_version=4)

    def tests(nb):
        return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
                for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}

    assert tests(released) == tests(source)
    stated = re.search(r"worth \*\*(\d+) points\*\*", source.cells[0].source)
    assert stated, "the introduction should state the total points"
    assert sum(tests(source).values()) == int(stated.group(1))


def test_source_notebooks_are_stored_without_outputs():
    for path in (REPO / "assignments").glob("*/*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), path
